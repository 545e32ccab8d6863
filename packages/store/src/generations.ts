import { isTerminal, type RunRecord } from '@codefleet/core';
import type { RunStore } from './port.js';

// A job's runs: one per delivery cycle. Normally one, under the job's id; a job redriven
// out of the dead-letter queue runs again as a new run, its failed run kept as it ended.

/** The run id of a job's `generation`-th run: the job id, then `<job id>~2`, `~3` … (`~` is never in a job id). */
export function runIdOf(jobId: string, generation: number): string {
  return generation <= 1 ? jobId : `${jobId}~${generation}`;
}

/** The job and generation a run id names: the inverse of {@link runIdOf}. */
export function generationOf(runId: string): { jobId: string; generation: number } {
  const match = /^(.+)~(\d+)$/.exec(runId);
  return match ? { jobId: match[1] ?? runId, generation: Number(match[2]) } : { jobId: runId, generation: 1 };
}

/** The job's latest run and its generation (1 when it has none yet): each redrive adds one. */
export async function latestRun(
  store: Pick<RunStore, 'get'>,
  jobId: string,
): Promise<{ run: RunRecord | undefined; generation: number }> {
  let run = await store.get(jobId).catch(() => undefined);
  let generation = 1;
  while (run !== undefined && isTerminal(run.stage)) {
    const next = await store.get(runIdOf(jobId, generation + 1)).catch(() => undefined);
    if (next === undefined) break;
    run = next;
    generation += 1;
  }
  return { run, generation };
}
