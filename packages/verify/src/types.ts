import type { ProcessRunner } from '@codefleet/process';
import type { PackageManager } from './plan/package-manager.js';
/** A toolchain the verifier knows how to check, detected from its marker file. */
export type Toolchain = 'node' | 'go' | 'python' | 'rust';

/** All toolchains, in detection priority (the first marker found wins). */
export const toolchains = ['node', 'go', 'rust', 'python'] as const satisfies readonly Toolchain[];

/**
 * One verification step, in the order they run:
 * - `install`: dependencies (Node only); skipped when `node_modules` matches the lockfile;
 * - `build`: compile; a failure is fed back to the agent;
 * - `format`: fixes files in place; never fails the run unless it cannot run at all;
 * - `lint`: vet or lint; a failure is fed back to the agent;
 * - `test`: the test suite; a failure is fed back to the agent.
 */
export type StepName = 'install' | 'build' | 'format' | 'lint' | 'test';

/** Step names in the order they run. */
export const stepOrder = ['install', 'build', 'format', 'lint', 'test'] as const satisfies readonly StepName[];

/** A step to run: its name and an argument vector (never a shell string). */
export interface PlannedStep {
  name: StepName;
  command: string[];
}

/** What `planVerification` decided for one working copy. */
export interface VerifyPlan {
  /** The detected (or `.codefleet.yml`-chosen) toolchain; `none` when no marker file was found. */
  toolchain: Toolchain | 'none';
  /** Steps in run order; skipped steps are left out. */
  steps: PlannedStep[];
  /** Definition-of-done commands, each an argv array; empty when there is none. */
  dod: string[][];
  /**
   * Variables the repository's checks need on top of the worker's (a Python `src/` layout's
   * PYTHONPATH, a provided package manager's PATH entry); combine with {@link planEnv}.
   */
  env: Record<string, string>;
  /**
   * The most specific layer that shaped the plan: `job` when the job's DoD is used, `repo`
   * when `.codefleet.yml` set anything, else `detected` (marker files and config only).
   */
  source: 'detected' | 'repo' | 'job';
  /**
   * Node only: the repository's package manager (its `packageManager` field, else its
   * lockfile), which installs and runs the scripts. Anything but npm must be provided on
   * PATH before the steps run (`provideManager`).
   */
  packageManager?: PackageManager;
  /**
   * Node only: the root package.json's scripts as planning read them, so a step that runs
   * one (`npm test`) can be told apart by the runner it starts (see `listingTestCommand`).
   */
  scripts?: Record<string, string>;
}

/**
 * What the scanner found in a step's whole output (not only its tail), kept so feedback
 * can name failures that scrolled out of the tail. Bounded in size; plain JSON.
 */
export interface LogFindings {
  /** Failing test names (and failing test files), in order of first appearance, deduplicated. */
  failingTests: string[];
  /** Failing test names dropped because the list reached its cap. */
  omittedTests: number;
  /** The first error blocks (compiler, lint, assertion), each whole lines joined by `\n`. */
  errors: string[];
  /** Error blocks dropped because the list reached its cap. */
  omittedErrors: number;
}

/**
 * One test's outcome in one run, as its runner reported it: `skipped` covers whatever did
 * not run to a verdict (skipped, ignored, pending, todo, an expected failure).
 */
export type TestOutcome = 'passed' | 'failed' | 'skipped';

/** The facts of one step run (or DoD command), as the run record keeps them. */
export interface StepResult {
  name: StepName | 'dod';
  command: string[];
  /** 124 when the timeout stopped it; null when it did not run or a signal ended it. */
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
  /** The end of combined stdout and stderr, bounded. */
  outputTail: string;
  /** Whether the step counts as passed; `format` passes whenever it could run to completion. */
  passed: boolean;
  /** True when the step was not run (install up to date, empty command). */
  skipped?: boolean;
  /** Failed the same way on the untouched base commit: reported, not held against the change. */
  preexisting?: boolean;
  /**
   * With `preexisting`: it failed as it did at the base, where it did not run on the code
   * either (no failing test, no error in a file of the repository, no runner summary: a tool
   * missing, a config that cannot load, a timeout), so it did not check the change at all.
   */
  unverifiable?: boolean;
  /** With `unverifiable`: the line of its output at the base that says why it did not run (`make: pixi: No such file or directory`). */
  unverifiableReason?: string;
  /** Set when the program could not start (e.g. not on PATH): an environment problem. */
  spawnError?: string;
  /** Failing tests and first errors found anywhere in the output; only on failed steps. */
  findings?: LogFindings;
}

/** Options shared by {@link StepResult}-producing runs. */
export interface RunOptions {
  /** The complete environment of every command; nothing is inherited. */
  env: Record<string, string>;
  /** Timeout of one command; a command that exceeds it is killed with its process group. */
  timeoutMs: number;
  /** Aborting stops the running command and rejects with a `cancelled` error. */
  signal?: AbortSignal;
  /** Bytes of output tail kept per command. Default 8192. */
  tailBytes?: number;
  /**
   * Where commands run: the job's sandbox (the pipeline passes one) or, by default, plain
   * `runProcess`. Install steps get {@link RunOptions.installRunner} when set: only they may
   * write the dependencies later steps and jobs use.
   */
  runner?: ProcessRunner;
  /** The runner for the install step; default {@link RunOptions.runner}. */
  installRunner?: ProcessRunner;
  /**
   * Where the dependency hash of the last successful install is kept, outside the working
   * copy (the workspace gives one): then nothing a run writes into `node_modules` can make
   * an install look fresh. Unset: a stamp file inside `node_modules`.
   */
  installStamp?: string;
  /** The install runs on the job's base, before any agent run: its record may be kept for the next job. */
  installClean?: boolean;
  /** Receives each command's output as it arrives, with the step's name (live progress). */
  onOutput?: (step: StepName | 'dod', chunk: string) => void;
}
