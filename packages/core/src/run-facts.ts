import type { RunRecord, Verification } from './run.js';

// Facts derived from a run record for the places that show it to people (the PR body,
// `codefleet show`, the failure comment), so all of them say the same thing the same way.

/** What one verification entry says about the change. */
export type CheckStatus =
  /** Ran and passed. */
  | 'passed'
  /** Ran and failed: held against the change. */
  | 'failed'
  /** Not run (install up to date, an empty command); its output holds the reason. */
  | 'skipped'
  /** Failed, and failed the same way on the untouched base commit: not held against the change. */
  | 'preexisting'
  /** Failed the same way on the base without ever running on the code: it checked nothing. */
  | 'unverifiable';

/** The words every report uses for a step that fails on the base commit too. */
export const preexistingWords = 'failing on the base commit too (pre-existing, not caused by this change)';

/** The words for a step that could not run on the worker, at the base or on the change. */
export const unverifiableWords =
  'could not run on this worker (it fails the same way on the base commit): it did not check this change';

/** The words for a `preexisting` entry: {@link unverifiableWords} when it could not run at all. */
export function baseWords(v: Pick<Verification, 'unverifiable'>): string {
  return v.unverifiable === true ? unverifiableWords : preexistingWords;
}

/** The status of one entry; `skipped` wins (a skipped step is recorded as passed). */
export function checkStatus(v: Verification): CheckStatus {
  if (v.skipped === true) return 'skipped';
  if (v.passed) return 'passed';
  if (v.preexisting !== true) return 'failed';
  return v.unverifiable === true ? 'unverifiable' : 'preexisting';
}

/** Why a skipped step was not run: the first line of its output, where the verifier puts it. */
export function skipReason(v: Verification): string {
  const line = v.output_tail.split('\n').find((l) => l.trim() !== '');
  return line === undefined ? 'not run' : line.trim();
}

/** One phrase for an entry: `passed`, `failed`, `skipped: <reason>` or {@link preexistingWords}. */
export function describeCheck(v: Verification): string {
  const status = checkStatus(v);
  if (status === 'skipped') return `skipped: ${skipReason(v)}`;
  if (status === 'preexisting' || status === 'unverifiable') return baseWords(v);
  return status;
}

/** The latest entry of each step, in the order the steps first ran: what the checks ended as. */
export function latestChecks(run: Pick<RunRecord, 'verification'>): Verification[] {
  // A Map keeps the order in which a key was first set, whatever is set later.
  const latest = new Map<string, Verification>();
  for (const v of run.verification) latest.set(v.step, v);
  return [...latest.values()];
}

/** How many entries have each status. */
export type CheckCounts = Record<CheckStatus, number>;

/** Whether an entry failed on the base too (pre-existing, or unverifiable): not the change's. */
export function failsOnBase(v: Verification): boolean {
  const status = checkStatus(v);
  return status === 'preexisting' || status === 'unverifiable';
}

/** Counts `entries` by status: a pre-existing failure is not a failure of the change. */
export function countChecks(entries: readonly Verification[]): CheckCounts {
  const counts: CheckCounts = { passed: 0, failed: 0, skipped: 0, preexisting: 0, unverifiable: 0 };
  for (const v of entries) counts[checkStatus(v)] += 1;
  return counts;
}

/** `2 passed, 1 failed, 1 skipped, 1 failing on the base commit too`; `none` when empty. */
export function formatCheckCounts(counts: CheckCounts): string {
  const parts = [
    counts.passed > 0 ? `${counts.passed} passed` : '',
    counts.failed > 0 ? `${counts.failed} failed` : '',
    counts.skipped > 0 ? `${counts.skipped} skipped` : '',
    counts.preexisting > 0 ? `${counts.preexisting} failing on the base commit too (pre-existing)` : '',
    // Never folded into the pre-existing count: a check that never ran is no evidence at all.
    counts.unverifiable > 0 ? `${counts.unverifiable} could not run (unverifiable)` : '',
  ].filter((p) => p !== '');
  return parts.length === 0 ? 'none' : parts.join(', ');
}

/**
 * The files the run's agent runs changed, each once, sorted. Every agent run reports the
 * files that differ from the commit it started on, so the union covers both passes.
 */
export function changedFilesOf(run: Pick<RunRecord, 'agent_runs'>): string[] {
  return [...new Set(run.agent_runs.flatMap((r) => r.changed_files))].sort();
}
