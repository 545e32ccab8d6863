import { formatDuration } from '@codefleet/core';
import { describeHold, type PendingJob } from '@codefleet/queue';
import { displayText } from '../format.js';
import type { Runtime } from '../runtime.js';

/**
 * `codefleet pending`: jobs still in the queue, which no run record shows yet (a run is
 * recorded when a worker claims its job), longest-waiting first, each with the
 * concurrency limit that holds it back when one does.
 */
export async function listPending(rt: Runtime, json: boolean, limit = 100, now = Date.now()): Promise<string> {
  const pending = await rt.queue.pending({ limit });
  if (json) return JSON.stringify(pending.map(pendingJson), null, 2);
  if (pending.length === 0) return 'no jobs waiting in the queue';
  return pending.map((job) => displayText(pendingLine(job, now))).join('\n');
}

function pendingLine(job: PendingJob, now: number): string {
  const waited = formatDuration(now - job.enqueuedAt);
  const why = job.heldBy === undefined ? 'ready' : describeHold(job.heldBy);
  return `${job.id}  ${job.repo}  ${job.priority}  by ${job.requestedBy}  waited ${waited}  ${why}`;
}

/** snake_case keys, as every --json of the CLI. */
function pendingJson(job: PendingJob): Record<string, unknown> {
  return {
    job_id: job.id,
    repo: job.repo,
    requested_by: job.requestedBy,
    priority: job.priority,
    enqueued_at: new Date(job.enqueuedAt).toISOString(),
    ...(job.heldBy === undefined ? {} : { held_by: job.heldBy }),
  };
}
