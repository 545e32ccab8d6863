import { currentAttempt, type RunRecord } from '@codefleet/core';

/**
 * The order of run-record versions as one string that compares like the tuple (attempt number,
 * stage-history length, updated_at): zero-padded counts, then the ISO time, whose one
 * format compares correctly as text. The attempt number comes first because a worker that
 * takes a task over starts a new attempt: whatever the previous holder writes late, with
 * however fresh a clock, is on an older attempt and loses.
 */
export function runVersion(run: RunRecord): string {
  const pad = (n: number) => String(n).padStart(6, '0');
  return `${pad(currentAttempt(run))}.${pad(run.stages.length)}.${run.updated_at}`;
}
