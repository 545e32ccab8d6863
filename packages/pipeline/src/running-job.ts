import type { Agent } from '@codefleet/agents';
import { advance, cancelRequested, LeaseLostError, startAttempt, type RunRecord, type Stage } from '@codefleet/core';
import type { LeaseVerdict } from '@codefleet/queue';
import type { JobReporter } from '@codefleet/requester';
import type { Workspace } from '@codefleet/workspace';
import type { Enter, JobContext, PipelineDeps } from './deps.js';
import type { Chain } from './escalation.js';
import type { JobRunners } from './sandboxed.js';
import { RunTracker } from './tracker.js';
import { runReporter } from './undelivered.js';

/** What the worker should do with the lease after a run. */
export type JobResult = LeaseVerdict & { run: RunRecord };

/** A publishing write, checked against the task lease right before it happens. */
export type FenceAction = 'push' | 'pull_request' | 'comment';

/** One delivery of a job as its stages see it, from its first stage to its settling. */
export interface RunningJob {
  deps: PipelineDeps;
  /** The delivery; its signal is also aborted when the job's wall-clock budget runs out. */
  ctx: JobContext;
  /** Aborted only from outside the job: the lease was lost or the worker is shutting down. */
  stopped: AbortSignal;
  tracker: RunTracker;
  now: () => Date;
  enter: Enter;
  /** Tells whoever asked where the job is: best effort, fenced like every publishing write. */
  tell: JobReporter['tell'];
  fence: (action: FenceAction) => Promise<void>;
  /** worker.job_budget_seconds in ms (unset: none) and the signal aborted once it is spent. */
  budget: { ms: number | undefined; signal: AbortSignal };
  /** The job's working copy, once the preparing stage made it: released when the delivery ends. */
  ws?: Workspace;
  /** Clears the budget's timer and releases the working copy; `failed` keeps it when so configured. */
  end(failed: boolean): Promise<void>;
}

/** What the preparing stage made for the stages after it. */
export interface Prepared {
  /** The escalation chain the job runs, undefined for a single agent. */
  chain: Chain | undefined;
  /** One agent per tier of the chain, in order; else the job's one agent (or its patch engine). */
  agents: Agent[];
  criteria: string[];
  branch: string;
  ws: Workspace;
  runners: JobRunners;
  /** The base commit's memory bank, summarized for the prompts; '' for none. */
  memory: string;
}

/**
 * Starts the attempt on `run` (new, resumed or redriven; see resumeOrRedrive) and builds what
 * every stage shares. The job's wall-clock budget counts from its first attempt, across
 * redeliveries: past it, the running agent is stopped and the job fails with
 * budget_exceeded (not a hang).
 */
export async function startRun(
  deps: PipelineDeps,
  ctx: JobContext,
  start: { run: RunRecord; runId: string },
): Promise<RunningJob> {
  const now = deps.now ?? (() => new Date());
  const { job } = ctx;
  const tracker = new RunTracker(start.run, deps.store, deps.log.child({ job_id: job.id }), deps.settings.secrets);
  const fence = (action: FenceAction) => fenceFor(deps, ctx, action);
  // Progress goes in the background (the job never waits for an edit); a final report is awaited under its deadline.
  // Not under the job's signal: a cancel or a lost lease aborts it, and the cancel must still be told.
  const { tell } = runReporter(deps, start.runId, { before: () => fence('comment') });
  await tracker.update((r) => startAttempt(r, { workerId: ctx.workerId, now: now(), delivery: ctx.attempt }));
  const budget = new AbortController();
  const budgetMs = deps.settings.jobBudgetMs;
  const firstStart = Date.parse(tracker.run.attempts[0]?.started_at ?? '') || now().getTime();
  const budgetLeft = budgetMs === undefined ? undefined : budgetMs - (now().getTime() - firstStart);
  const budgetTimer = budgetLeft === undefined ? undefined : setTimeout(() => budget.abort(), Math.max(0, budgetLeft));
  const running: RunningJob = {
    deps,
    ctx: { ...ctx, signal: AbortSignal.any([ctx.signal, budget.signal]) },
    stopped: ctx.signal,
    tracker,
    now,
    enter: stageEntry(deps, ctx, tracker, tell),
    tell,
    fence,
    budget: { ms: budgetMs, signal: budget.signal },
    async end(failed) {
      clearTimeout(budgetTimer);
      await running.ws
        ?.release({ keep: failed && deps.settings.keepFailed })
        .catch((err: unknown) =>
          deps.log.warn(
            { err, event: 'workspace.release_failed', job_id: job.id },
            'could not release the working copy',
          ),
        );
    },
  };
  return running;
}

/**
 * Whether requesters that show progress (a Slack status message) are told of entering
 * `stage`: the agent's tests, the pull request, and implementing again when a note says
 * why (another tier takes over, a run resumed). `started` already says the work began;
 * preparing, planning and validating pass in seconds; and an edit each would cost part of
 * the dozen Web API calls a Slack mention that becomes a PR may make. Other requesters
 * ignore progress.
 */
function toldAsProgress(stage: Stage, note: string | undefined): boolean {
  return stage === 'testing' || stage === 'publishing' || (stage === 'implementing' && note !== undefined);
}

// Entering a stage: the cancel check, the record, the progress report.
function stageEntry(deps: PipelineDeps, ctx: JobContext, tracker: RunTracker, tell: JobReporter['tell']): Enter {
  const now = deps.now ?? (() => new Date());
  const { job } = ctx;
  return async (stage: Stage, note?: string) => {
    // A cancel asked for on the issue stops the job at the next stage boundary (the worker
    // also checks at every heartbeat, to stop a running agent sooner).
    const cancel = await deps.store.cancelRequested(job.idempotency_key).catch(() => undefined);
    if (cancel) throw cancelRequested(cancel.by);
    await tracker.update((r) => advance(r, stage, { now: now(), ...(note === undefined ? {} : { note }) }));
    ctx.onProgress?.({ stage });
    deps.log.info({ event: 'stage.entered', job_id: job.id, stage, attempt: ctx.attempt }, stage);
    if (toldAsProgress(stage, note))
      await tell({ kind: 'progress', job, stage, ...(note === undefined ? {} : { note }) });
  };
}

/**
 * A worker paused past its lease (or cut off) must not publish: each write asks the shared
 * store first. A refusal is recorded there and ends this delivery untouched.
 */
export async function fenceFor(deps: PipelineDeps, ctx: JobContext, action: FenceAction): Promise<void> {
  const { job } = ctx;
  if (ctx.leaseToken === undefined) return;
  if (!(await deps.store.fence(job.idempotency_key, ctx.leaseToken, action, job.id))) {
    throw new LeaseLostError(
      job.id,
      `lease on task ${job.idempotency_key} was lost before the ${action} write; another worker owns it now`,
    );
  }
}
