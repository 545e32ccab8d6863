import type { PlannedStep, RunOptions, StepResult } from '../types.js';
import { compareWithBase, stepKey, type Baseline } from './baseline.js';
import { clearInstallStamp, installIsFresh, writeInstallStamp } from './install.js';
import { runStep, skippedStep } from './step.js';

/**
 * What a formatter may touch: the files the change already holds. Files it would rewrite
 * beyond them (a whole-crate `cargo fmt`) are put back, so the change stays the task's.
 */
export interface FormatScope {
  /** The files the change holds now (tracked changes and new files, relative paths). */
  changedFiles(): Promise<string[]>;
  /** Puts `files` back as they were at the change's start (new ones removed). */
  restore(files: readonly string[]): Promise<void>;
}

/** Options of {@link runVerification}. */
export interface VerificationOptions extends RunOptions {
  /**
   * `build-only` (pass 1 of the loop: did the implementation compile?) runs install and
   * build; `full` (pass 2) runs every step. Default `full`.
   */
  phase?: 'build-only' | 'full';
  /** The base commit's results under the same plan: checks failing there too do not fail the change. */
  baseline?: Baseline;
  /** Set: the format step's changes are kept only in files the change already holds. */
  formatScope?: FormatScope;
}

/** Outcome of {@link runVerification}. */
export interface VerificationOutcome {
  passed: boolean;
  /** Every step that ran or was skipped, in order, the failed one last. */
  results: StepResult[];
  /** The step that failed and stopped the run: what to feed back to the agent. */
  failed?: StepResult;
  /** Checks that failed as they fail at the base (marked `preexisting`): the run went on past them. */
  preexisting: StepResult[];
  /**
   * Of those, the ones that did not run on the code, here or at the base (marked
   * `unverifiable` too): they checked nothing, and the change is not verified by them.
   */
  unverifiable: StepResult[];
}

/**
 * Runs `steps` in the order given (`planVerification` returns install → build → format →
 * lint → test), each with `timeoutMs`, and stops at the first failure. The install step is
 * skipped when `node_modules` carries a stamp matching the lockfile, and stamps it after a
 * successful install. A timed-out step fails with `timedOut: true`. A check that fails as
 * it fails on the base commit (`baseline`) is marked `preexisting` and the run goes on.
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
  const preexisting: StepResult[] = [];
  const unverifiable: StepResult[] = [];
  for (const step of selected) {
    const result = step.name === 'install'
      ? await install(workdir, step, options)
      : step.name === 'format' && options.formatScope !== undefined
        ? await format(workdir, step, options, options.formatScope)
        : await runStep(step.name, step.command, workdir, options);
    results.push(result);
    if (result.passed) continue;
    const comparison = compareWithBase(result, options.baseline, workdir);
    if (comparison === 'new') return { passed: false, results, failed: result, preexisting, unverifiable };
    result.preexisting = true;
    preexisting.push(result);
    if (comparison === 'unverifiable') {
      result.unverifiable = true;
      const reason = options.baseline?.failing[stepKey(result)]?.unavailable;
      if (reason !== undefined) result.unverifiableReason = reason;
      unverifiable.push(result);
    }
  }
  return { passed: true, results, preexisting, unverifiable };
}

async function format(workdir: string, step: PlannedStep, options: RunOptions, scope: FormatScope): Promise<StepResult> {
  const before = new Set(await scope.changedFiles());
  const result = await runStep('format', step.command, workdir, options);
  const beyond = (await scope.changedFiles()).filter((file) => !before.has(file));
  if (beyond.length === 0) return result;
  await scope.restore(beyond);
  const named = beyond.slice(0, 10).join(', ') + (beyond.length > 10 ? ` and ${beyond.length - 10} more` : '');
  return { ...result, outputTail: `${result.outputTail}\n[codefleet] the formatter's changes to files the change does not touch were undone: ${named}\n` };
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
