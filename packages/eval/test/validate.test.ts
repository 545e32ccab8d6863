import { describe, expect, it } from '@jest/globals';
import { classifyTests, type RunStatuses } from '../src/index.js';

const run = (passed: string[], failed: string[] = [], skipped: string[] = []): RunStatuses => ({
  passed,
  failed,
  skipped,
});

describe('classifyTests', () => {
  it('sorts tests into FAIL_TO_PASS, NEW_TO_PASS and PASS_TO_PASS, and leaves flaky ones out', () => {
    const classified = classifyTests({
      // changed: a test of the base whose assertion the task's tests changed; file: the whole file of new tests failed to load.
      base: run(['kept', 'changed', 'wobbly']),
      withTests: run(['kept', 'wobbly', 'old news'], ['changed', 'test/new.test.js']),
      withFix: run(['kept', 'changed', 'new', 'wobbly', 'old news']),
      withFixAgain: run(['kept', 'changed', 'new', 'old news'], ['wobbly']),
    });
    expect(classified).toEqual({
      lists: {
        FAIL_TO_PASS: ['changed'],
        NEW_TO_PASS: ['new'],
        PASS_TO_PASS: ['kept', 'old news'],
        flaky_excluded: ['wobbly'],
      },
    });
  });

  it('rejects a fix that breaks a passing test, and tests that pass without the fix', () => {
    expect(
      classifyTests({
        base: run(['a']),
        withTests: run(['a'], ['b']),
        withFix: run(['b'], ['a']),
        withFixAgain: run(['b'], ['a']),
      }),
    ).toEqual({ rejected: 'the fix breaks 1 test(s) that passed: a' });
    expect(
      classifyTests({
        base: run(['a']),
        withTests: run(['a', 'b']),
        withFix: run(['a', 'b']),
        withFixAgain: run(['a', 'b']),
      }),
    ).toEqual({
      rejected: 'no test goes from failing or absent to passing',
    });
    // A test that fails only in one of the two runs with the fix is flaky, not broken.
    expect(
      classifyTests({
        base: run(['a']),
        withTests: run(['a'], ['b']),
        withFix: run(['b'], ['a']),
        withFixAgain: run(['a', 'b']),
      }),
    ).toEqual({ lists: { FAIL_TO_PASS: [], NEW_TO_PASS: ['b'], PASS_TO_PASS: [], flaky_excluded: ['a'] } });
  });
});
