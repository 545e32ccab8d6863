import type { PlannedStep, RunOptions, StepResult } from '../types.js';
import { clearInstallStamp, installIsFresh, writeInstallStamp } from './install.js';
import { runStep, skippedStep } from './step.js';

/** Options of {@link runVerification}. */
export interface VerificationOptions extends RunOptions {
  /**
   * `build-only` (pass 1 of the loop: did the implementation compile?) runs install and
   * build; `full` (pass 2) runs every step. Default `full`.
   */
  phase?: 'build-only' | 'full';
}

/** Outcome of {@link runVerification}. */
export interface VerificationOutcome {
  passed: boolean;
  /** Every step that ran or was skipped, in order, the failed one last. */
  results: StepResult[];
  /** The step that failed and stopped the run: what to feed back to the agent. */
  failed?: StepResult;
}

/**
 * Runs `steps` in the order given (`planVerification` returns install → build → format →
 * lint → test), each with `timeoutMs`, and stops at the first failure. The install step is
 * skipped when `node_modules` carries a stamp matching the lockfile, and stamps it after a
 * successful install. A timed-out step fails with `timedOut: true`.
 *
 * @throws {CodefleetError} `cancelled` when `signal` aborts.
 */
export async function runVerification(
  workdir: string,
  steps: readonly PlannedStep[],
  options: VerificationOptions,
): Promise<VerificationOutcome> {
  const phase = options.phase ?? 'full';
  const selected = phase === 'build-only' ? steps.filter((step) => step.name === 'install' || step.name === 'build') : steps;
  const results: StepResult[] = [];
  for (const step of selected) {
    const result = step.name === 'install' ? await install(workdir, step, options) : await runStep(step.name, step.command, workdir, options);
    results.push(result);
    if (!result.passed) return { passed: false, results, failed: result };
  }
  return { passed: true, results };
}

async function install(workdir: string, step: PlannedStep, options: RunOptions): Promise<StepResult> {
  if (await installIsFresh(workdir, options.installStamp)) {
    return skippedStep('install', step.command, 'node_modules matches the lockfile: install skipped');
  }
  await clearInstallStamp(workdir, options.installStamp);
  const result = await runStep('install', step.command, workdir, options);
  if (result.passed) await writeInstallStamp(workdir, options.installStamp, options.installClean === true);
  return result;
}
