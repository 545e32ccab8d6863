import type { DodResult } from '@codefleet/core';
import type { RunOptions, StepResult } from '../types.js';
import { runStep } from './step.js';

/** Outcome of {@link runDod}: the AM `dod_result` and every command's result. */
export interface DodOutcome {
  result: DodResult;
  results: StepResult[];
}

/**
 * Runs every definition-of-done command (all of them, so the report is complete), each with
 * `timeoutMs`. `skipped` when there are none, `timeout` when any timed out, `failed` when
 * any failed, else `passed`.
 *
 * @throws {CodefleetError} `cancelled` when `signal` aborts.
 */
export async function runDod(
  workdir: string,
  dod: readonly (readonly string[])[],
  options: RunOptions,
): Promise<DodOutcome> {
  if (dod.length === 0) return { result: 'skipped', results: [] };
  const results: StepResult[] = [];
  for (const command of dod) results.push(await runStep('dod', command, workdir, options));
  let result: DodResult = 'passed';
  if (results.some((step) => step.timedOut)) result = 'timeout';
  else if (results.some((step) => !step.passed)) result = 'failed';
  return { result, results };
}
