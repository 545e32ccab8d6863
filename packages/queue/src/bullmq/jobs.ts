import { parseJob, parseJobJson, type Job } from '@codefleet/core';
import type { BullQueue } from './bull-classes.js';

/** Completed jobs are kept this long for stats and audits, then BullMQ trims them. */
export const keepCompletedSeconds = 7 * 24 * 3_600;

/** Validates a payload as stored: a job object, or a JSON string from a foreign producer. */
export function readJob(data: unknown): { job: Job } | { error: string } {
  try {
    return { job: typeof data === 'string' ? parseJobJson(data) : parseJob(data) };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/** The codefleet job id behind a BullMQ job id (its payload's id; the BullMQ id for a malformed one). */
export async function jobIdOf(queue: BullQueue, bullId: string): Promise<string> {
  const found = await queue.getJob(bullId);
  const read = found ? readJob(found.data) : undefined;
  return read && 'job' in read ? read.job.id : bullId;
}
