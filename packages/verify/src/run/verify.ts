import type { PlannedStep, RunOptions, StepResult } from '../types.js';
import { compareWithBase, stepKey, type Baseline } from './baseline.js';
import { readRepoFile } from '../plan/repo-file.js';
import { scriptCommand, type PackageManagerName } from '../plan/package-manager.js';
import { clearInstallStamp, dependencyHash, installIsFresh, writeInstallStamp } from './install.js';
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
  /**
   * An install that failed at the base (`result`) for the dependencies hashing to `hash`
   * (`dependencyHash`): while the copy's dependencies still hash so, the install is not run
   * again, `result` is its result.
   */
  knownInstallFailure?: { hash: string; result: StepResult };
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
  const selected =
    phase === 'build-only' ? steps.filter((step) => step.name === 'install' || step.name === 'build') : steps;
  const results: StepResult[] = [];
  const preexisting: StepResult[] = [];
  const unverifiable: StepResult[] = [];
  for (const step of selected) {
    const result =
      step.name === 'install'
        ? ((await knownFailure(workdir, options)) ?? (await install(workdir, step, options)))
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

async function format(
  workdir: string,
  step: PlannedStep,
  options: RunOptions,
  scope: FormatScope,
): Promise<StepResult> {
  const before = new Set(await scope.changedFiles());
  const result = await runStep('format', step.command, workdir, options);
  const beyond = (await scope.changedFiles()).filter((file) => !before.has(file));
  if (beyond.length === 0) return result;
  await scope.restore(beyond);
  const named = beyond.slice(0, 10).join(', ') + (beyond.length > 10 ? ` and ${beyond.length - 10} more` : '');
  return {
    ...result,
    outputTail: `${result.outputTail}\n[codefleet] the formatter's changes to files the change does not touch were undone: ${named}\n`,
  };
}

async function knownFailure(workdir: string, options: VerificationOptions): Promise<StepResult | undefined> {
  const known = options.knownInstallFailure;
  if (known === undefined || (await dependencyHash(workdir)) !== known.hash) return undefined;
  return {
    ...known.result,
    outputTail: `[codefleet] not run again: the dependencies are as they were when this install failed on the base commit\n${known.result.outputTail}`,
  };
}

async function install(workdir: string, step: PlannedStep, options: RunOptions): Promise<StepResult> {
  if (await installIsFresh(workdir, options.installStamp)) {
    const prepare = await prepareCommand(workdir, step.command);
    if (prepare === undefined)
      return skippedStep('install', step.command, 'node_modules matches the lockfile: install skipped');
    // What the install's `prepare` made outside node_modules (a `build/` by tsc) is gone
    // from a reused copy and would be stale for a changed tree: made again, as the install
    // would. With the checks' runner, not the install's: node_modules stays read-only to it.
    const { installRunner: _own, ...checks } = options;
    const result = await runStep('install', prepare, workdir, checks);
    return {
      ...result,
      outputTail: `node_modules matches the lockfile: only its prepare script ran\n${result.outputTail}`,
    };
  }
  await clearInstallStamp(workdir, options.installStamp);
  const result = await runStep('install', step.command, workdir, options);
  if (result.passed) await writeInstallStamp(workdir, options.installStamp, options.installClean === true);
  return result;
}

// Installs that run the root package's `prepare` script: npm, pnpm, bun and yarn classic
// (its install command alone says `--non-interactive`); yarn berry never runs it.
const preparingManagers: readonly PackageManagerName[] = ['npm', 'pnpm', 'bun', 'yarn'];

/** The command that runs the root `prepare` script as `install` (argv) would, or undefined when it would not. */
async function prepareCommand(workdir: string, install: readonly string[]): Promise<string[] | undefined> {
  const manager = install[0] as PackageManagerName;
  if (!preparingManagers.includes(manager) || (manager === 'yarn' && !install.includes('--non-interactive')))
    return undefined;
  if (install.includes('--ignore-scripts')) return undefined;
  const file = await readRepoFile(workdir, 'package.json', { maxBytes: 4 * 1024 * 1024 });
  if (file.status !== 'read') return undefined;
  try {
    const scripts = (JSON.parse(file.content.toString('utf8')) as { scripts?: Record<string, unknown> }).scripts;
    const body = scripts?.prepare;
    return typeof body === 'string' && body.trim() !== '' ? scriptCommand({ name: manager }, 'prepare') : undefined;
  } catch {
    return undefined;
  }
}
