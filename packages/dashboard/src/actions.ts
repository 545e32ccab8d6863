import { createJob, isTerminal, type Job, type RunRecord } from '@codefleet/core';
import type { EnqueueResult } from '@codefleet/queue';
import { latestRunOf } from './runs-read.js';
import type { ActionDeps, DashboardQueue, DashboardStore } from './deps.js';
import { retryKey } from './request-keys.js';

/** What an action did; `status` is the HTTP status it answers with. */
export interface ActionResult {
  status: 200 | 400 | 404 | 409;
  message: string;
  /** Where the page goes afterwards. */
  runId?: string;
}

/** An operator action the dashboard can take. */
type ActionName = 'cancel' | 'retry' | 'redrive' | 'drop';

/** Longest reason an action keeps. */
export const maxReasonChars = 500;

/** The reason given, trimmed, or why it cannot be kept (missing where required, too long). */
export function reasonOf(
  given: string | undefined,
  required: string | undefined,
): { reason: string | undefined } | { problem: string } {
  const reason = (given ?? '').trim();
  if (reason.length > maxReasonChars) return { problem: `a reason has at most ${maxReasonChars} characters` };
  if (reason === '' && required !== undefined)
    return { problem: `give a reason for ${required} (1..${maxReasonChars} characters)` };
  return { reason: reason === '' ? undefined : reason };
}

/**
 * Who a cancel request names, so the worker's error and the requester's report say which
 * operator stopped the job (`cancel requested by @dashboard:alice`). The shared token's
 * default operator reads `dashboard`, as it always has.
 */
export function cancelledBy(operator: string): string {
  return operator === 'dashboard' ? operator : `dashboard:${operator}`;
}

/**
 * Asks the worker running (or about to run) the run's task to stop, for the operator's
 * reason (required: the journal is where the requester's team reads why): the cancel
 * request is recorded in the store under the task key, where every worker looks at each
 * heartbeat and stage. A finished run has nothing to cancel.
 */
export async function cancelRun(deps: ActionDeps, runId: string, given: string | undefined): Promise<ActionResult> {
  const why = reasonOf(given, `cancelling run ${runId}`);
  if ('problem' in why) return { status: 400, message: why.problem, runId };
  const run = await deps.store.get(runId);
  if (run === undefined) return { status: 404, message: `no run ${runId}` };
  if (isTerminal(run.stage))
    return { status: 409, message: `run ${runId} has already finished (${run.outcome ?? run.stage})`, runId };
  const taskKey = run.job.idempotency_key;
  await deps.store.requestCancel(taskKey, cancelledBy(deps.by));
  await journal(deps, 'cancel', run, { ...(why.reason === undefined ? {} : { detail: why.reason }) });
  return { status: 200, message: `cancel requested for run ${runId}`, runId };
}

/** What a retry needs, from the dashboard or the CLI (`codefleet retry`). */
export type RetryDeps = Pick<ActionDeps, 'by' | 'now' | 'newId'> & {
  queue: Pick<DashboardQueue, 'enqueue'>;
  store: Pick<
    DashboardStore,
    | 'get'
    | 'requestCancel'
    | 'cancelRequested'
    | 'clearCancel'
    | 'record'
    | 'bindRequest'
    | 'setRequest'
    | 'releaseRequest'
  >;
  /** Where the action came from, for the journal; default `dashboard`. */
  via?: 'dashboard' | 'cli';
};

/**
 * How long a run remembers the job it was retried as. A run is retried once: the retry's
 * own run is the one to retry after that.
 */
export const retryKeyTtlMs = 400 * 24 * 60 * 60 * 1000;

/**
 * Runs a finished run's task again: a new job with the same task, idempotency key and
 * branch (the one the run worked on), so it lands in the same pull request, after clearing
 * any cancel left on the task. Only the job's latest run may be retried, once finished, and
 * only once: the run's request key (`retry:<run id>`, bound atomically in the run store
 * whatever the queue backend) remembers its job, so a second retry (a double click, the
 * CLI after the dashboard, a client repeating a request) answers with that job instead
 * of queueing another.
 */
export async function retryRun(deps: RetryDeps, runId: string): Promise<ActionResult> {
  const run = await deps.store.get(runId);
  if (run === undefined) return { status: 404, message: `no run ${runId}` };
  if (!isTerminal(run.stage)) return { status: 409, message: `run ${runId} has not finished; cancel it first`, runId };
  const latest = await latestRunOf(deps.store, run.job.id);
  if (latest !== undefined && latest.run_id !== run.run_id)
    return {
      status: 409,
      message: `run ${runId} is not the job's latest run (${latest.run_id})`,
      runId: latest.run_id,
    };
  const job = createJob(retryInput(run), { id: deps.newId(), now: deps.now() });
  const key = retryKey(run.run_id);
  const bound = await deps.store.bindRequest(key, job.id, retryKeyTtlMs);
  if (!bound.bound)
    return {
      status: 200,
      message: `run ${runId} was already retried as job ${bound.value}; retry that job's run instead`,
      runId: bound.value,
    };
  // Nothing queued after all: free the key, so the operator can retry the run later.
  const release = () => deps.store.releaseRequest(key);
  const queued = await enqueueRetry(deps, job).catch(async (error: unknown) => {
    await release().catch(() => {});
    throw error;
  });
  if (queued.deduplicated) {
    await release();
    return { status: 409, message: `the task is already queued or running as job ${queued.id}`, runId };
  }
  await journal(deps, 'retry', run, { jobId: job.id, detail: `queued again as job ${job.id}` });
  return { status: 200, message: `run ${runId} queued again as job ${job.id}`, runId: job.id };
}

/** Queues the retry's job, after clearing a cancel left on its task (restored if the job is not queued). */
async function enqueueRetry(deps: RetryDeps, job: Job): Promise<EnqueueResult> {
  const taskKey = job.idempotency_key;
  // The cancel left on the task (the operator often cancelled this very run) must go before
  // the job is queued, or a worker claiming it at once would cancel it. When the task turns
  // out to be queued or running as another job, a cancel asked for it stands: put it back.
  const standing = await deps.store.cancelRequested(taskKey);
  await deps.store.clearCancel(taskKey);
  const restore = async () => {
    if (standing !== undefined) await deps.store.requestCancel(taskKey, standing.by);
  };
  const queued = await deps.queue.enqueue(job).catch(async (error: unknown) => {
    await restore();
    throw error;
  });
  if (queued.deduplicated) await restore();
  return queued;
}

/**
 * The job's fields a retry keeps: everything but its identity and time. The branch is the
 * run's: a branch derived from the job id would change with the new id.
 */
function retryInput(run: RunRecord): Parameters<typeof createJob>[0] {
  const { id: _id, created_at: _created, v: _v, ...rest } = run.job;
  return { ...rest, ...(run.branch?.startsWith('ai/') === true ? { branch: run.branch } : {}) };
}

/** Puts a dead-lettered job back on the queue with a fresh attempt budget; a reason, if given, is journaled. */
export async function redriveDeadLetter(
  deps: ActionDeps,
  id: string,
  given: string | undefined,
): Promise<ActionResult> {
  const why = reasonOf(given, undefined);
  if ('problem' in why) return { status: 400, message: why.problem };
  const letter = (await deps.queue.deadLetters({ limit: 1000 })).find((d) => d.id === id);
  const result = await deps.queue.redrive(id);
  const runId = letter?.job?.id;
  if (result.status === 'not_found') return { status: 404, message: `no dead-lettered job ${id}` };
  if (result.status === 'refused_unsigned')
    return { status: 409, message: `not redriven: ${result.reason} (a worker would refuse it again)` };
  if (result.status === 'duplicate_active')
    return {
      status: 409,
      message: `job ${result.activeId} with the same task is still queued or running`,
      ...(runId === undefined ? {} : { runId }),
    };
  const latest = runId === undefined ? undefined : await latestRunOf(deps.store, runId);
  await deps.store.record({
    kind: 'action',
    action: 'redrive',
    jobId: id,
    by: deps.by,
    via: 'dashboard',
    at: deps.now().toISOString(),
    ...(why.reason === undefined ? {} : { detail: why.reason }),
    ...(latest === undefined ? {} : { runId: latest.run_id, taskKey: latest.job.idempotency_key }),
  });
  return { status: 200, message: `redriven ${id}`, ...(runId === undefined ? {} : { runId }) };
}

/** What a drop needs, from the dashboard or the CLI (`codefleet dlq drop`). */
export type DropDeps = Pick<ActionDeps, 'by' | 'now'> & {
  queue: Pick<DashboardQueue, 'deadLetters' | 'drop'>;
  store: Pick<DashboardStore, 'get' | 'record'>;
  via?: 'dashboard' | 'cli';
};

/**
 * Removes a dead-lettered job for good, with the operator's reason (required: a dropped
 * job is gone, the journal is all that says why), journaled as redrive is. Dropping
 * again is a 404 and journals nothing. A valid job whose run has not finished (its worker
 * died on every attempt) is refused until a worker has reported it (`reportDeadLetters`,
 * at a worker's start and every few minutes): dropped first, its requester would never
 * hear that it failed.
 */
export async function dropDeadLetter(deps: DropDeps, id: string, given: string | undefined): Promise<ActionResult> {
  const why = reasonOf(given, `dropping ${id}: the job is gone afterwards`);
  if ('problem' in why) return { status: 400, message: why.problem };
  const letter = (await deps.queue.deadLetters({ limit: 1000 })).find((d) => d.id === id);
  const latest = letter?.job === undefined ? undefined : await latestRunOf(deps.store, letter.job.id);
  if (letter?.job !== undefined && (latest === undefined || !isTerminal(latest.stage))) {
    return {
      status: 409,
      message: `not dropped: job ${id} has not been reported failed yet (its worker stopped on it); a worker reports it at its start and every 5 minutes, drop it after that`,
    };
  }
  const result = await deps.queue.drop(id);
  if (result.status === 'not_found') return { status: 404, message: `no dead-lettered job ${id}` };
  await deps.store.record({
    kind: 'action',
    action: 'drop',
    jobId: id,
    by: deps.by,
    via: deps.via ?? 'dashboard',
    at: deps.now().toISOString(),
    ...(why.reason === undefined ? {} : { detail: why.reason }),
    ...(latest === undefined ? {} : { runId: latest.run_id, taskKey: latest.job.idempotency_key }),
  });
  return { status: 200, message: `dropped ${id}` };
}

async function journal(
  deps: Pick<RetryDeps, 'store' | 'by' | 'now' | 'via'>,
  action: ActionName,
  run: RunRecord,
  extra: { jobId?: string; detail?: string },
): Promise<void> {
  await deps.store.record({
    kind: 'action',
    action,
    runId: run.run_id,
    jobId: extra.jobId ?? run.job.id,
    taskKey: run.job.idempotency_key,
    by: deps.by,
    via: deps.via ?? 'dashboard',
    at: deps.now().toISOString(),
    ...(extra.detail === undefined ? {} : { detail: extra.detail }),
  });
}
