import { cancelRequested, finish, newRun, type Job, type RunRecord } from '@codefleet/core';
import { latestRun, runIdOf } from '@codefleet/store';
import { cancelledBy, reasonOf, type ActionResult } from './actions.js';
import type { ActionDeps, DashboardQueue, DashboardStore, ReportCancelled } from './deps.js';

/**
 * Cancels a job still waiting in the queue, for the operator's reason (required, as for a
 * run): the queue removes it before any worker claims it, and a cancelled run is recorded for
 * it (its first, or the next of a redriven job), so the runs list and the run page show who
 * cancelled it and why, as for a run cancelled while running. A job a worker claimed
 * meanwhile is refused: cancel its run instead.
 */
export async function cancelQueuedJob(deps: ActionDeps, id: string, given: string | undefined): Promise<ActionResult> {
  const why = reasonOf(given, `cancelling queued job ${id}`);
  if ('problem' in why) return { status: 400, message: why.problem };
  const removed = await removeQueuedJob(deps, id, cancelledBy(deps.by));
  if (removed === undefined) {
    const { run } = await latestRun(deps.store, id);
    return run === undefined
      ? { status: 404, message: `no job ${id} is waiting in the queue` }
      : {
          status: 409,
          message: `job ${id} is no longer waiting (its run is ${run.stage}): cancel the run instead`,
          runId: run.run_id,
        };
  }
  await deps.store.record({
    kind: 'action',
    action: 'cancel',
    jobId: id,
    by: deps.by,
    via: 'dashboard',
    at: deps.now().toISOString(),
    ...(removed.runId === undefined ? {} : { runId: removed.runId }),
    ...(removed.job === undefined ? {} : { taskKey: removed.job.idempotency_key }),
    ...(why.reason === undefined ? {} : { detail: why.reason }),
  });
  return {
    status: 200,
    message: `cancelled queued job ${id}`,
    ...(removed.runId === undefined ? {} : { runId: removed.runId }),
  };
}

/**
 * What removing a queued job needs: the queue, the store its cancelled run is saved in, a
 * clock, and who to tell.
 */
export interface RemoveQueuedDeps {
  queue: Pick<DashboardQueue, 'cancelPending'>;
  store: Pick<DashboardStore, 'get' | 'save'>;
  now: () => Date;
  reportCancelled?: ReportCancelled | undefined;
}

/**
 * Takes job `id` out of the queue before any worker claims it, saves its cancelled run (the
 * error naming `by`, who asked, as a worker's cancel does) and reports it to whoever asked
 * for the job. Resolves the job and that run's id (none when the engine does not hand the
 * job back: a malformed payload has nobody to tell), or undefined when no job with the id
 * is waiting. The dashboard's and the CLI's cancel both come here, and journal it.
 */
export async function removeQueuedJob(
  deps: RemoveQueuedDeps,
  id: string,
  by: string,
): Promise<{ job?: Job; runId?: string } | undefined> {
  const result = await deps.queue.cancelPending(id);
  if (result.status === 'not_found') return undefined;
  if (result.job === undefined) return {};
  const run = await recordCancelled(deps, result.job, by);
  // The sender logs its own failure: the cancel is done whatever the report says.
  await deps.reportCancelled?.(result.job, run, by).catch(() => undefined);
  return { job: result.job, runId: run.run_id };
}

/** Saves the cancelled run of a job taken out of the queue; resolves it. */
async function recordCancelled(deps: RemoveQueuedDeps, job: Job, by: string): Promise<RunRecord> {
  const { run, generation } = await latestRun(deps.store, job.id);
  const runId = run === undefined ? job.id : runIdOf(job.id, generation + 1);
  const now = deps.now();
  const queued = newRun(job, {
    runId,
    now: new Date(Math.min(now.getTime(), Date.parse(job.created_at) || now.getTime())),
  });
  const cancelled = finish(queued, 'cancelled', {
    now,
    error: cancelRequested(by),
    note: 'cancelled in the queue, before any worker claimed it',
  });
  await deps.store.save(cancelled);
  return cancelled;
}
