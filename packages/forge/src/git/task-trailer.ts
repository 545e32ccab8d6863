// The trailer codefleet's commits carry to name the task they publish. A redelivered job
// reads it on a branch it lost the race for, to tell an earlier attempt's push of the same
// task (its own work, landed after its worker died) from somebody else's.
import { createHash } from 'node:crypto';

/** The trailer's key, as written in the commit message and read by `git log --format=%(trailers)`. */
export const taskTrailerKey = 'Codefleet-Task';

/**
 * The trailer's value for a task: a hash of the job's idempotency key, which is the same for
 * every delivery and attempt of one piece of work. Hashed, because the key is free text (an
 * API caller's, a chat thread's ids, a repository URL) that has no place in a public history;
 * 80 bits tell tasks apart on one branch with room to spare.
 */
export function taskTrailerValue(idempotencyKey: string): string {
  return createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 20);
}

/** The trailer line for a task: the last paragraph of a commit message, on its own. */
export function taskTrailer(idempotencyKey: string): string {
  return `${taskTrailerKey}: ${taskTrailerValue(idempotencyKey)}`;
}
