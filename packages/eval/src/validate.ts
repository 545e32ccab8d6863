import type { Instance } from './task.js';

/** Each test's outcome in one run, as the verifier's test-status scanner reads it. */
export interface RunStatuses {
  passed: readonly string[];
  failed: readonly string[];
  skipped: readonly string[];
}

/** The four runs that decide an instance: base, base + tests, base + tests + fix, and that once more. */
export interface ValidationRuns {
  base: RunStatuses;
  withTests: RunStatuses;
  withFix: RunStatuses;
  withFixAgain: RunStatuses;
}

/** The test lists of a valid instance, or why it is not one. */
export type Classified =
  { lists: Pick<Instance, 'FAIL_TO_PASS' | 'PASS_TO_PASS' | 'NEW_TO_PASS' | 'flaky_excluded'> } | { rejected: string };

const names = (run: RunStatuses) => new Set([...run.passed, ...run.failed, ...run.skipped]);
const shown = (list: readonly string[]) =>
  `${list.slice(0, 3).join(', ')}${list.length > 3 ? ` and ${list.length - 3} more` : ''}`;

// A test's outcome in a run: passed, failed, skipped, or absent (not reported).
function outcome(run: RunStatuses, name: string): string {
  if (run.failed.includes(name)) return 'failed';
  if (run.passed.includes(name)) return 'passed';
  return run.skipped.includes(name) ? 'skipped' : 'absent';
}

/**
 * Sorts an instance's tests by how they went across its runs, the SWE-bench way, or rejects it:
 * - flaky: an outcome that differs between the two runs with the fix; left out of every list;
 * - FAIL_TO_PASS: a test of the base that fails (or is not reported) with the tests and passes with the fix;
 * - NEW_TO_PASS: a test the base does not have that passes only with the fix;
 * - PASS_TO_PASS: passes with the tests and with the fix.
 * Rejected: a test that passes with the tests and fails with the fix (the fix breaks it), or
 * no test going to pass at all (the tests do not check the fix).
 */
export function classifyTests(runs: ValidationRuns): Classified {
  const fixNames = [...new Set([...names(runs.withFix), ...names(runs.withFixAgain)])];
  const flaky = fixNames.filter((name) => outcome(runs.withFix, name) !== outcome(runs.withFixAgain, name));
  const stable = (name: string) => !flaky.includes(name);
  const broken = runs.withTests.passed.filter((name) => stable(name) && runs.withFix.failed.includes(name));
  if (broken.length > 0) return { rejected: `the fix breaks ${broken.length} test(s) that passed: ${shown(broken)}` };
  const atBase = names(runs.base);
  const passedWithTests = new Set(runs.withTests.passed);
  const toPass = runs.withFix.passed.filter((name) => stable(name) && !passedWithTests.has(name));
  const lists = {
    FAIL_TO_PASS: toPass.filter((name) => atBase.has(name)),
    NEW_TO_PASS: toPass.filter((name) => !atBase.has(name)),
    PASS_TO_PASS: runs.withFix.passed.filter((name) => stable(name) && passedWithTests.has(name)),
    flaky_excluded: flaky,
  };
  if (toPass.length === 0) return { rejected: 'no test goes from failing or absent to passing' };
  return { lists };
}
