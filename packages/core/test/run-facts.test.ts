import { describe, expect, it } from '@jest/globals';
import {
  changedFilesOf,
  checkStatus,
  countChecks,
  describeCheck,
  formatCheckCounts,
  latestChecks,
  preexistingWords,
  unverifiableWords,
} from '../src/run-facts.js';
import { agentRunFixture, verificationFixture } from './fixtures.js';

describe('run facts', () => {
  const skipped = verificationFixture({
    step: 'install',
    passed: true,
    skipped: true,
    output_tail: '\nnode_modules matches the lockfile: install skipped\n',
  });
  const preexisting = verificationFixture({ step: 'lint', passed: false, preexisting: true, exit_code: 1 });
  const failed = verificationFixture({ passed: false, exit_code: 1 });

  it('tells the four kinds of check apart, in the words every report uses', () => {
    expect([verificationFixture(), failed, skipped, preexisting].map(checkStatus)).toEqual([
      'passed',
      'failed',
      'skipped',
      'preexisting',
    ]);
    expect(describeCheck(skipped)).toBe('skipped: node_modules matches the lockfile: install skipped');
    expect(describeCheck(preexisting)).toBe(preexistingWords);
    expect(preexistingWords).toBe('failing on the base commit too (pre-existing, not caused by this change)');
    // One that could not run at all, at the base or on the change, says it checked nothing.
    expect(describeCheck({ ...preexisting, unverifiable: true })).toBe(unverifiableWords);
    expect(unverifiableWords).toMatch(/could not run on this worker .*did not check this change/);
  });

  it('counts the latest run of each step, a pre-existing failure apart from a failure', () => {
    const run = { verification: [failed, skipped, preexisting, verificationFixture({ inner_attempt: 2 })] };
    expect(latestChecks(run).map((v) => [v.step, v.inner_attempt])).toEqual([
      ['test', 2],
      ['install', 1],
      ['lint', 1],
    ]);
    const counts = countChecks(latestChecks(run));
    expect(counts).toEqual({ passed: 1, failed: 0, skipped: 1, preexisting: 1, unverifiable: 0 });
    expect(formatCheckCounts(counts)).toBe('1 passed, 1 skipped, 1 failing on the base commit too (pre-existing)');
  });

  it('never counts a check that could not run as pre-existing: it is unverifiable, not evidence', () => {
    const unverifiable = verificationFixture({
      step: 'lint',
      passed: false,
      preexisting: true,
      unverifiable: true,
      exit_code: 2,
    });
    expect(checkStatus(unverifiable)).toBe('unverifiable');
    expect(describeCheck(unverifiable)).toBe(unverifiableWords);
    const counts = countChecks([verificationFixture(), unverifiable, preexisting]);
    expect(counts).toEqual({ passed: 1, failed: 0, skipped: 0, preexisting: 1, unverifiable: 1 });
    expect(formatCheckCounts(counts)).toBe(
      '1 passed, 1 failing on the base commit too (pre-existing), 1 could not run (unverifiable)',
    );
    expect(formatCheckCounts(countChecks([]))).toBe('none');
  });

  it('lists each changed file once, sorted, across agent runs', () => {
    const run = {
      agent_runs: [
        agentRunFixture({ changed_files: ['src/b.ts'] }),
        agentRunFixture({ changed_files: ['test/b.test.ts', 'src/b.ts', 'README.md'] }),
      ],
    };
    expect(changedFilesOf(run)).toEqual(['README.md', 'src/b.ts', 'test/b.test.ts']);
  });
});
