import type { DeadLetter, DropResult, RedriveResult } from '../port.js';
import type { BullJob, BullQueue } from './bull-classes.js';
import { priorityOf, redriveJobId } from './ids.js';
import { jobIdOf, keepCompletedSeconds, readJob } from './jobs.js';

/** How much of a malformed payload the dead letter keeps. */
const rawLimit = 4_096;

/** What the dead-letter operations use of a `BullmqQueue`. */
export interface DeadLetterSide {
  queue: BullQueue;
  maxAttempts: number;
  /** Waits for the producer connection (see `BullmqQueue`). */
  connected: () => Promise<void>;
}

/** The dead letter (BullMQ's failed set), at most `options.limit` of it. */
export async function listDeadLetters(side: DeadLetterSide, options: { limit?: number }): Promise<DeadLetter[]> {
  await side.connected();
  const limit = options.limit ?? 1_000;
  const failed = await side.queue.getJobs(['failed'], 0, Math.max(0, limit - 1), true);
  return failed
    .filter((j): j is BullJob => j !== undefined && j !== null)
    .map((j) => {
      const job = readJob(j.data);
      const raw = typeof j.data === 'string' ? j.data : JSON.stringify(j.data ?? null);
      return {
        id: 'job' in job ? job.job.id : (j.id ?? ''),
        reason: j.failedReason || 'unknown',
        attempts: Math.min(j.attemptsStarted, side.maxAttempts),
        deadAt: j.finishedOn ?? j.timestamp,
        ...('job' in job ? { job: job.job } : {}),
        raw: raw.slice(0, rawLimit),
      };
    });
}

/**
 * A valid job goes back as a new BullMQ job (fresh attempts, its deduplication id
 * restored) before the failed one is removed, so a crash in between leaves a
 * duplicate in the dead letter, never a lost job. A malformed one is retried as is.
 */
export async function redriveDeadLetter(side: DeadLetterSide, id: string): Promise<RedriveResult> {
  const [failed] = await failedWithId(side, id);
  if (!failed?.id) return { status: 'not_found' };
  const read = readJob(failed.data);
  if (!('job' in read)) {
    await failed.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    return { status: 'redriven', id };
  }
  const job = read.job;
  const newId = redriveJobId(job.id, Date.now());
  const added = await side.queue.add('job', job, {
    jobId: newId,
    priority: priorityOf(job.priority),
    attempts: 1,
    deduplication: { id: job.idempotency_key },
    removeOnComplete: { age: keepCompletedSeconds },
    removeOnFail: false,
  });
  if (added.id !== newId) {
    // Deduplicated: another job with the same key is queued or running.
    return { status: 'duplicate_active', activeId: added.id === undefined ? '' : await jobIdOf(side.queue, added.id) };
  }
  await failed.remove();
  return { status: 'redriven', id };
}

/** Every failed BullMQ job of dead letter `id` (a crash mid-redrive can leave two). */
export async function dropDeadLetter(side: DeadLetterSide, id: string): Promise<DropResult> {
  const failed = await failedWithId(side, id);
  for (const j of failed) await j.remove();
  return failed.length > 0 ? { status: 'dropped', id } : { status: 'not_found' };
}

async function failedWithId(side: DeadLetterSide, id: string): Promise<BullJob[]> {
  await side.connected();
  return (await side.queue.getJobs(['failed'], 0, -1, true)).filter((j): j is BullJob => {
    const read = j ? readJob(j.data) : undefined;
    return read !== undefined && ('job' in read ? read.job.id === id : j?.id === id);
  });
}
