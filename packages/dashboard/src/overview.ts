import { formatUsd, runningStages, stages, type Stage } from '@codefleet/core';
import type { DashboardDeps } from './deps.js';
import { utcDay, type JournalEntry, type RunSummary, type WorkerInfo } from '@codefleet/store';

/** Something an operator should act on; the overview shows nothing else as a warning. */
export interface Warning {
  kind: 'no_worker' | 'overdue' | 'dead_letters' | 'undelivered' | 'day_budget';
  message: string;
  /** Where to act, when it is on the dashboard. */
  href?: string;
}

/** What the overview shows, read at one moment. */
export interface Overview {
  /** Epoch ms it was read at. */
  now: number;
  queue: {
    ready: number;
    delayed: number;
    inFlight: number;
    deadLetter: number;
    depth: number;
    oldestQueuedAt?: number;
  };
  /** Unfinished runs per stage; `queued` is the jobs ready in the queue. */
  perStage: Partial<Record<Stage, number>>;
  workers: WorkerInfo[];
  /** Unfinished runs past the worst-case wall time of a job. */
  overdue: { runId: string; title: string; startedAt: string }[];
  /** Reports that could not be delivered, newest first, within {@link undeliveredWindowMs}. */
  undelivered: Extract<JournalEntry, { kind: 'undelivered_report' }>[];
  /** Today's (UTC) spend from the run store's ledger against the daily budget, when there is one. */
  spend?: { day: string; spentUsd: number; limitUsd: number };
  warnings: Warning[];
}

/**
 * How far back an undelivered report still warns. The journal has no "dealt with" mark: a
 * report that failed a week ago has been seen or is moot, and a warning that never goes
 * away stops being read.
 */
const undeliveredWindowMs = 7 * 24 * 60 * 60 * 1000;

/** Unfinished runs are few (bounded by the fleet's concurrency plus the queue); this bounds one read. */
const activeLimit = 1000;

/** Reads the overview from the queue and the store. */
export async function readOverview(
  deps: Pick<DashboardDeps, 'queue' | 'store' | 'worstCaseMs' | 'dayBudgetUsd'>,
  now: number,
): Promise<Overview> {
  const day = utcDay(new Date(now));
  const limitUsd = deps.dayBudgetUsd;
  const [stats, active, workers, journal, spentUsd] = await Promise.all([
    deps.queue.stats(),
    deps.store.list({ state: 'active', limit: activeLimit }),
    deps.store.listWorkers(),
    deps.store.journal({ kind: 'undelivered_report', limit: 20 }),
    limitUsd === undefined ? undefined : deps.store.spentOn(day),
  ]);
  const perStage: Partial<Record<Stage, number>> = {};
  for (const run of active) if (run.stage !== 'queued') perStage[run.stage] = (perStage[run.stage] ?? 0) + 1;
  // A job's run record is written when a worker claims it: jobs waiting in the queue have
  // none yet, so the queue says how many are queued.
  perStage.queued = stats.ready;
  const overdue = await overdueRuns(deps, active, now);
  const undelivered = journal.filter(
    (entry): entry is Extract<JournalEntry, { kind: 'undelivered_report' }> =>
      entry.kind === 'undelivered_report' && now - Date.parse(entry.at) <= undeliveredWindowMs,
  );
  const queue = {
    ready: stats.ready,
    delayed: stats.delayed,
    inFlight: stats.inFlight,
    deadLetter: stats.deadLetter,
    depth: stats.depth,
    ...(stats.oldestQueuedAt === undefined ? {} : { oldestQueuedAt: stats.oldestQueuedAt }),
  };
  const spend = limitUsd === undefined || spentUsd === undefined ? {} : { spend: { day, spentUsd, limitUsd } };
  const overview = { now, queue, perStage, workers: workers.map(withoutOutput), overdue, undelivered, ...spend };
  return { ...overview, warnings: warningsOf(overview) };
}

/**
 * A worker's entry without its jobs' output lines: the overview shows each job's stage and
 * step, and a page is re-sent only when what it shows changed, not at every line printed.
 */
function withoutOutput(worker: WorkerInfo): WorkerInfo {
  return {
    ...worker,
    jobs: worker.jobs.map(({ progress, ...job }) =>
      progress === undefined ? job : { ...job, progress: { ...progress, lines: [] } },
    ),
  };
}

/**
 * Runs whose first attempt started longer ago than the worst case allows. Time spent queued
 * before it is not counted (the worst case bounds a job from its first attempt; a backlog
 * has its own warning), so only runs that have started are read in full.
 */
async function overdueRuns(
  deps: Pick<DashboardDeps, 'store' | 'worstCaseMs'>,
  active: RunSummary[],
  now: number,
): Promise<Overview['overdue']> {
  const started = active.filter((run) => run.stage !== 'queued' && now - Date.parse(run.createdAt) > deps.worstCaseMs);
  const out: Overview['overdue'] = [];
  for (const summary of started) {
    const run = await deps.store.get(summary.runId);
    const first = run?.attempts[0]?.started_at;
    if (first !== undefined && now - Date.parse(first) > deps.worstCaseMs)
      out.push({ runId: summary.runId, title: summary.title, startedAt: first });
  }
  return out;
}

/** The warnings of an overview: each only when there is something to do about it. */
export function warningsOf(o: Omit<Overview, 'warnings'>): Warning[] {
  const warnings: Warning[] = [];
  if (o.queue.depth > 0 && o.workers.length === 0) {
    warnings.push({
      kind: 'no_worker',
      message: `${o.queue.depth} job(s) waiting and no live worker: start one (codefleet worker)`,
    });
  }
  for (const run of o.overdue) {
    warnings.push({
      kind: 'overdue',
      message: `run ${run.runId} has run past the worst-case time of a job: look at it, or cancel it`,
      href: `/runs/${encodeURIComponent(run.runId)}`,
    });
  }
  if (o.queue.deadLetter > 0) {
    warnings.push({
      kind: 'dead_letters',
      message: `${o.queue.deadLetter} job(s) in the dead-letter queue: redrive or drop them`,
      href: '/dead-letters',
    });
  }
  for (const entry of o.undelivered) {
    warnings.push({
      kind: 'undelivered',
      message: `the ${entry.report} report of run ${entry.runId} could not be delivered to ${entry.requester}: tell the requester`,
      href: `/runs/${encodeURIComponent(entry.runId)}`,
    });
  }
  if (o.spend !== undefined && o.spend.spentUsd >= o.spend.limitUsd) {
    const { spentUsd, limitUsd } = o.spend;
    warnings.push({
      kind: 'day_budget',
      message: `the fleet spent ${formatUsd(spentUsd)} of its ${formatUsd(limitUsd)} daily budget (costs.budget_usd.day): workers claim nothing until 00:00 UTC; ${o.queue.depth} job(s) wait in the queue. Raise the budget and restart the workers to go on today`,
    });
  }
  return warnings;
}

/** The stages shown in the per-stage counts: the unfinished ones, in pipeline order. */
export const unfinishedStages: readonly Stage[] = stages.filter(
  (s) => s === 'queued' || s === 'retry_wait' || (runningStages as readonly Stage[]).includes(s),
);
