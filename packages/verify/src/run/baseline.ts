import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { constants } from 'node:fs';
import { dirname } from 'node:path';
import { findExecutable } from '@codefleet/process';
import type { PlannedStep, RunOptions, StepResult } from '../types.js';
import { notRunReason, sameReason, stripAnsi } from './evidence.js';
import { runStep } from './step.js';

/**
 * What the untouched base commit did under a plan: the checks that failed there, and how. A
 * change is held only to what passes at its base (SWE-bench's PASS_TO_PASS idea): a check
 * that fails there the same way is pre-existing, not the agent's doing.
 */
export interface Baseline {
  /** Failing checks by {@link stepKey}. */
  failing: Record<string, BaselineFailure>;
  /** Steps that ran at the base, by {@link stepKey}: a step not among them was never compared. */
  ran: string[];
  /** When it was taken (ISO 8601): tools get installed, so a baseline is trusted for a day only. */
  at?: string;
}

/** How one check failed at the base. */
export interface BaselineFailure {
  /** The failing tests its output named (maybe none). */
  failingTests: string[];
  /** Its exit code: a failure with another one is another failure. */
  exitCode?: number | null;
  /** Its error lines, numbers taken out ({@link errorSignatures}): a new one is the change's. */
  errors?: string[];
  /**
   * Set when the check did not run on the code there (see ranOnCode: no failing test, no
   * error in a file of the repository, no runner summary; or a timeout): the line that says
   * why (`make: pixi: No such file or directory`). Such a check cannot judge the change either.
   */
  unavailable?: string;
}

/** How a failed check compares with the base: the change's doing, the base's, or not judgeable here. */
export type BaseComparison = 'new' | 'preexisting' | 'unverifiable';

// Bumped when what a baseline records changes meaning: a cached one of another version is
// not read (one from before `unavailable` covered every failure that ran on nothing would
// file such a failure as pre-existing).
const baselineVersion = 'baseline-2';

/** One check's identity across runs: its step name and exact command. */
export function stepKey(step: { name: string; command: readonly string[] }): string {
  return JSON.stringify([step.name, step.command]);
}

/** A baseline's cache key: the plan's checks, so another plan on the same commit is verified again. */
export function planKey(steps: readonly PlannedStep[], env: Readonly<Record<string, string>> = {}, host = ''): string {
  const hash = createHash('sha256');
  hash.update(baselineVersion);
  hash.update(JSON.stringify(steps.map((step) => [step.name, step.command])));
  // The environment shapes results too (a PATH addition makes a tool appear), and so does
  // the host: what the sandbox shows, which tools are installed (see toolStamp).
  hash.update(JSON.stringify(Object.entries(env).sort(([a], [b]) => a.localeCompare(b))));
  hash.update(host);
  return hash.digest('hex').slice(0, 24);
}

/**
 * What the checks' programs are on this host: each command's program found on `path`, with
 * its real path, size and modification time. Part of a baseline's key, so installing or
 * upgrading a tool makes the next job verify its base again.
 */
export async function toolStamp(steps: readonly PlannedStep[], path: string | undefined): Promise<string> {
  const programs = [...new Set(steps.flatMap((step) => step.command.slice(0, 1)))].sort();
  const stamps: string[] = [];
  for (const program of programs) {
    const found = await findExecutable(program, '/', path);
    const real = found === undefined ? undefined : await realpath(found).catch(() => found);
    const info = real === undefined ? undefined : await stat(real).catch(() => undefined);
    stamps.push(`${program}=${real ?? 'missing'}:${info?.size ?? 0}:${info?.mtimeMs ?? 0}`);
  }
  return stamps.join('\n');
}

// Formatters rewrite files and pass whenever they run: nothing to compare, and at the base
// they would leave changes the agent never made. Installs ran already (installAtBase).
const compared = (step: PlannedStep) => step.name !== 'install' && step.name !== 'format';

/**
 * Runs every check of `steps` at the base (all of them: a failing build does not hide a
 * failing lint), and returns what failed. Each result is returned too, for the record. A
 * check that could not start is not a failure of the base: the change meets the same
 * problem as "could not start", an environment error.
 *
 * @throws {CodefleetError} `cancelled` when `signal` aborts.
 */
export async function runBaseline(
  workdir: string,
  steps: readonly PlannedStep[],
  options: RunOptions & { now?: Date },
): Promise<{ baseline: Baseline; results: StepResult[] }> {
  const baseline: Baseline = { failing: {}, ran: [], at: (options.now ?? new Date()).toISOString() };
  const results: StepResult[] = [];
  for (const step of steps.filter(compared)) {
    const result = await runStep(step.name, step.command, workdir, options);
    results.push(result);
    baseline.ran.push(stepKey(step));
    if (result.passed || result.spawnError !== undefined) continue;
    const unavailable = notRunReason(result, workdir);
    baseline.failing[stepKey(step)] = {
      failingTests: [...(result.findings?.failingTests ?? [])],
      exitCode: result.exitCode,
      errors: errorSignatures(result),
      ...(unavailable === undefined ? {} : { unavailable }),
    };
  }
  return { baseline, results };
}

/**
 * How `result` (a failed check on the change, run in `workdir`) compares with its base:
 * - `unverifiable`: it did not run on the code there (see ranOnCode) and fails here the same
 *   way (same exit code, same reason line, numbers aside), again without running on the
 *   code: it cannot judge the change, and nobody should think it did;
 * - `preexisting`: the same check failed there with the same exit code, every test it names
 *   failed there too, and every error line it prints was printed there (numbers aside);
 * - `new` otherwise: the change's doing. When the base named failing tests (or errors) and
 *   the change names none, the failure has another shape (a crash before any test ran): new.
 */
export function compareWithBase(result: StepResult, baseline: Baseline | undefined, workdir?: string): BaseComparison {
  if (baseline === undefined || result.passed || result.name === 'dod' || result.spawnError !== undefined) return 'new';
  const base = baseline.failing[stepKey(result)];
  if (base === undefined) return 'new';
  if (result.timedOut)
    return base.unavailable !== undefined && base.exitCode === result.exitCode ? 'unverifiable' : 'new';
  if (base.exitCode !== undefined && base.exitCode !== result.exitCode) return 'new';
  const reason = notRunReason(result, workdir);
  if (base.unavailable !== undefined)
    return reason !== undefined && sameReason(reason, base.unavailable) ? 'unverifiable' : 'new';
  if (reason !== undefined) return 'new';
  const now = result.findings?.failingTests ?? [];
  if (base.failingTests.length > 0 && now.length === 0) return 'new';
  const before = new Set(base.failingTests);
  if (!now.every((test) => before.has(test))) return 'new';
  const errors = new Set(base.errors ?? []);
  return base.errors === undefined || errorSignatures(result).every((line) => errors.has(line)) ? 'preexisting' : 'new';
}

/**
 * A failed check's error lines, comparable across commits: the first line of each error
 * block the scanner found, and each line of the tail that names a file position, with ANSI
 * codes, numbers and spacing taken out (a line moved by the change is the same error).
 */
export function errorSignatures(result: StepResult): string[] {
  const lines = [
    ...(result.findings?.errors ?? []).map((block) => block.split('\n')[0] ?? ''),
    ...stripAnsi(result.outputTail)
      .split('\n')
      .filter((line) => /\S+\.\w+[:(]\d+/.test(line) || /^(error|warning)(\[|:)/i.test(line.trim())),
  ];
  const signatures = lines
    .map((line) => stripAnsi(line).replace(/\d+/g, '#').replace(/\s+/g, ' ').trim())
    .filter((line) => line !== '');
  return [...new Set(signatures)].slice(0, 500);
}

/** Whether `baseline` is too old to trust at `now` (tools change on a worker; a day at most). */
export function isStale(baseline: Baseline, now: Date = new Date(), maxAgeMs = 24 * 60 * 60 * 1000): boolean {
  const at = baseline.at === undefined ? Number.NaN : Date.parse(baseline.at);
  return !Number.isFinite(at) || now.getTime() - at > maxAgeMs || at - now.getTime() > maxAgeMs;
}

// A baseline file is small; anything larger is not one of ours.
const maxBaselineBytes = 1024 * 1024;

/** The baseline cached at `file`, or undefined when there is none (or it is unreadable). */
export async function readBaseline(file: string): Promise<Baseline | undefined> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
  if (handle === undefined) return undefined;
  try {
    const info = await handle.stat();
    if (!info.isFile() || info.size > maxBaselineBytes) return undefined;
    const parsed = JSON.parse(await handle.readFile('utf8')) as unknown;
    return isBaseline(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

/** Caches `baseline` at `file` (outside any working copy), atomically. */
export async function writeBaseline(file: string, baseline: Baseline): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temp, JSON.stringify(baseline), { flag: 'wx' });
    await rename(temp, file);
  } finally {
    await rm(temp, { force: true });
  }
}

function isBaseline(value: unknown): value is Baseline {
  if (typeof value !== 'object' || value === null) return false;
  const { failing, ran } = value as Record<string, unknown>;
  if (!Array.isArray(ran) || !ran.every((key) => typeof key === 'string')) return false;
  if (typeof failing !== 'object' || failing === null) return false;
  const strings = (value: unknown) => Array.isArray(value) && value.every((item) => typeof item === 'string');
  return Object.values(failing).every((entry) => {
    if (typeof entry !== 'object' || entry === null) return false;
    const { failingTests, errors, unavailable } = entry as Record<string, unknown>;
    return (
      strings(failingTests) &&
      (errors === undefined || strings(errors)) &&
      (unavailable === undefined || typeof unavailable === 'string')
    );
  });
}
