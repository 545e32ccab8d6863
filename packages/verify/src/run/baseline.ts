import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import { constants } from 'node:fs';
import { dirname } from 'node:path';
import type { PlannedStep, RunOptions, StepResult } from '../types.js';
import { runStep } from './step.js';

/**
 * What the untouched base commit did under a plan: the checks that failed there, with the
 * tests they named. A change is held only to what passes at its base (SWE-bench's
 * PASS_TO_PASS idea): a check that fails there too is pre-existing, not the agent's doing.
 */
export interface Baseline {
  /** Failing checks by {@link stepKey}, each with the failing tests its output named (maybe none). */
  failing: Record<string, { failingTests: string[] }>;
  /** Steps that ran at the base, by {@link stepKey}: a step not among them was never compared. */
  ran: string[];
}

/** One check's identity across runs: its step name and exact command. */
export function stepKey(step: { name: string; command: readonly string[] }): string {
  return JSON.stringify([step.name, step.command]);
}

/** A baseline's cache key: the plan's checks, so another plan on the same commit is verified again. */
export function planKey(steps: readonly PlannedStep[], env: Readonly<Record<string, string>> = {}): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(steps.map((step) => [step.name, step.command])));
  // The environment shapes results too (a PATH addition makes a tool appear).
  hash.update(JSON.stringify(Object.entries(env).sort(([a], [b]) => a.localeCompare(b))));
  return hash.digest('hex').slice(0, 24);
}

// Formatters rewrite files and pass whenever they run: nothing to compare, and at the base
// they would leave changes the agent never made. Installs ran already (installAtBase).
const compared = (step: PlannedStep) => step.name !== 'install' && step.name !== 'format';

/**
 * Runs every check of `steps` at the base (all of them: a failing build does not hide a
 * failing lint), and returns what failed. Each result is returned too, for the record.
 *
 * @throws {CodefleetError} `cancelled` when `signal` aborts.
 */
export async function runBaseline(workdir: string, steps: readonly PlannedStep[], options: RunOptions): Promise<{ baseline: Baseline; results: StepResult[] }> {
  const baseline: Baseline = { failing: {}, ran: [] };
  const results: StepResult[] = [];
  for (const step of steps.filter(compared)) {
    const result = await runStep(step.name, step.command, workdir, options);
    results.push(result);
    baseline.ran.push(stepKey(step));
    if (!result.passed) baseline.failing[stepKey(step)] = { failingTests: [...(result.findings?.failingTests ?? [])] };
  }
  return { baseline, results };
}

/**
 * Whether `result` (a failed check on the change) is the failure its base had already:
 * the same check failed there, and every test it names failed there too. When the base
 * named failing tests and the change names none, the failure has another shape (a crash
 * before any test ran): not pre-existing. Without names on either side, the check's own
 * failure is all there is to compare.
 */
export function isPreexisting(result: StepResult, baseline: Baseline | undefined): boolean {
  if (baseline === undefined || result.passed || result.name === 'dod' || result.spawnError !== undefined) return false;
  const base = baseline.failing[stepKey(result)];
  if (base === undefined) return false;
  const now = result.findings?.failingTests ?? [];
  if (base.failingTests.length > 0 && now.length === 0) return false;
  const before = new Set(base.failingTests);
  return now.every((test) => before.has(test));
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
  return Object.values(failing).every((entry) =>
    typeof entry === 'object' && entry !== null && Array.isArray((entry as { failingTests?: unknown }).failingTests)
    && (entry as { failingTests: unknown[] }).failingTests.every((name) => typeof name === 'string'));
}
