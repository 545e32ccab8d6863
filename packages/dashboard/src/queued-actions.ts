import { cancelRequested, finish, newRun, type Job } from '@codefleet/core';
import { latestRun, runIdOf } from '@codefleet/store';
import { cancelledBy, reasonOf, type ActionResult } from './actions.js';
import type { ActionDeps } from './deps.js';

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
  const result = await deps.queue.cancelPending(id);
  if (result.status === 'not_found') {
    const { run } = await latestRun(deps.store, id);
    return run === undefined
      ? { status: 404, message: `no job ${id} is waiting in the queue` }
      : {
          status: 409,
          message: `job ${id} is no longer waiting (its run is ${run.stage}): cancel the run instead`,
          runId: run.run_id,
        };
  }
  const runId = result.job === undefined ? undefined : await recordCancelled(deps, result.job);
  await deps.store.record({
    kind: 'action',
    action: 'cancel',
    jobId: id,
    by: deps.by,
    via: 'dashboard',
    at: deps.now().toISOString(),
    ...(runId === undefined ? {} : { runId }),
    ...(result.job === undefined ? {} : { taskKey: result.job.idempotency_key }),
    ...(why.reason === undefined ? {} : { detail: why.reason }),
  });
  return { status: 200, message: `cancelled queued job ${id}`, ...(runId === undefined ? {} : { runId }) };
}

/** Saves the cancelled run of a job taken out of the queue; resolves its id. */
async function recordCancelled(deps: ActionDeps, job: Job): Promise<string> {
  const { run, generation } = await latestRun(deps.store, job.id);
  const runId = run === undefined ? job.id : runIdOf(job.id, generation + 1);
  const now = deps.now();
  const queued = newRun(job, {
    runId,
    now: new Date(Math.min(now.getTime(), Date.parse(job.created_at) || now.getTime())),
  });
  await deps.store.save(
    finish(queued, 'cancelled', {
      now,
      error: cancelRequested(cancelledBy(deps.by)),
      note: 'cancelled in the queue, before any worker claimed it',
    }),
  );
  return runId;
}
