import type { Job, PullRequestStatesReader, RunRecord } from '@codefleet/core';
import type { Queue } from '@codefleet/queue';
import type { RunStore } from '@codefleet/store';

/** The queue as the dashboard uses it. */
export type DashboardQueue = Pick<
  Queue,
  'enqueue' | 'deadLetters' | 'redrive' | 'drop' | 'stats' | 'pending' | 'cancelPending'
>;

/** The run store as the dashboard uses it: reads, cancel requests, workers and the journal. */
export type DashboardStore = Pick<
  RunStore,
  | 'get'
  | 'save'
  | 'list'
  | 'page'
  | 'requestCancel'
  | 'cancelRequested'
  | 'clearCancel'
  | 'listWorkers'
  | 'record'
  | 'journal'
  | 'spentOn'
  | 'fleetStats'
  | 'bindRequest'
  | 'setRequest'
  | 'releaseRequest'
>;

/** What the pages and actions read and write. */
export interface DashboardDeps {
  queue: DashboardQueue;
  store: DashboardStore;
  /** Worst-case wall time of a job from its first attempt (`worstCaseWallTimeMs` of the config). */
  worstCaseMs: number;
  /** The fleet's daily money budget (costs.budget_usd.day): the overview warns once today's spend reaches it. */
  dayBudgetUsd?: number | undefined;
  /** How long the overview's charts reuse one read of the store's day totals (default 60 s). */
  statsMaxAgeMs?: number | undefined;
  /** Refuse and hide the actions. */
  readOnly: boolean;
  now: () => Date;
  newId: () => string;
  /**
   * The forge's pull request states (bounded and cached: `createPullRequestStates`), which
   * a task's status is derived from; unset: statuses that hang on a PR show `open?`.
   */
  pullRequestStates?: PullRequestStatesReader;
  /** Tells whoever asked for a job cancelled in the queue (see {@link ReportCancelled}); unset: nobody is. */
  reportCancelled?: ReportCancelled;
}

/**
 * Tells whoever asked for a job taken out of the queue (its issue, chat thread or callback)
 * that it was cancelled and by whom, as a worker does for a job it stops: the requester's
 * promise that every job gets a final report. Best effort: it logs its own failure and never
 * rejects, since the cancel is done whatever it says.
 */
export type ReportCancelled = (job: Job, run: RunRecord, by: string) => Promise<void>;

/** What an action needs: the dashboard's reads and writes, and who takes it (the request's operator). */
export type ActionDeps = DashboardDeps & { by: string };
