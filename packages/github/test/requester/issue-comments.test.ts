import { describe, expect, it } from '@jest/globals';
import {
  addVerification,
  classify,
  CodefleetError,
  createJob,
  newRun,
  startAttempt,
  type RunRecord,
  type Verification,
} from '@codefleet/core';
import { verificationFixture } from '@codefleet/testkit';
import { failureComment, successComment } from '../../src/index.js';

// Hand-made run records: what the pipeline writes, without running a job.
const at = (s: number) => new Date(Date.parse('2026-01-05T10:00:00Z') + s * 1000);

const check = (overrides: Partial<Verification> = {}): Verification =>
  verificationFixture({ duration_ms: 900, ...overrides });

function runWith(checks: Verification[]): RunRecord {
  const job = createJob(
    { repo: 'octo/calc', source: { kind: 'issue', number: 4 }, title: 'Add multiply', body: '', requested_by: 'ann' },
    { id: 'job-1', now: at(0) },
  );
  const run = startAttempt(newRun(job, { runId: 'job-1', now: at(0) }), { workerId: 'w1', now: at(1) });
  return checks.reduce((r, v, i) => addVerification(r, v, { now: at(2 + i) }), run);
}

const reason =
  'pass test: still failing after 3 attempts. Last feedback:\nStep test failed (exit 1): npm test\nFailing tests:\n- multiplies by a negative number';
const error = classify(new CodefleetError('fix_attempts_exhausted', reason));

describe('failureComment', () => {
  it('quotes the failure of the change, and names a step failing on the base commit too apart from it', () => {
    const run = runWith([
      check({
        step: 'install',
        command: ['npm', 'ci'],
        exit_code: null,
        duration_ms: 0,
        skipped: true,
        output_tail: 'node_modules matches the lockfile: install skipped',
      }),
      check({ exit_code: 1, passed: false, output_tail: 'not ok 4 - multiplies by a negative number' }),
      check({
        step: 'lint',
        command: ['npm', 'run', 'lint'],
        exit_code: 2,
        passed: false,
        preexisting: true,
        output_tail: 'src/old.js: no-var',
      }),
    ]);
    const body = failureComment(run, error, reason);
    expect(body).toContain(
      'Last failing check: `npm test` (exit 1)\n\n```\nnot ok 4 - multiplies by a negative number\n```',
    );
    expect(body).not.toContain('Last failing check: `npm run lint`');
    expect(body).toContain(
      '\nlint: `npm run lint` (exit 2): failing on the base commit too (pre-existing, not caused by this change).\n',
    );
    expect(body).toContain(
      '\nChecks (latest run of each step): 1 failed, 1 skipped, 1 failing on the base commit too (pre-existing).\n',
    );
  });

  it('gives no failing check when the only failure is pre-existing', () => {
    const body = failureComment(
      runWith([
        check({ step: 'lint', command: ['npm', 'run', 'lint'], exit_code: 2, passed: false, preexisting: true }),
      ]),
      error,
      'no_changes: nothing changed',
    );
    expect(body).not.toContain('Last failing check');
    expect(body).toContain('failing on the base commit too (pre-existing, not caused by this change)');
  });

  it('sums the reason up in one line and quotes the whole of it below', () => {
    const body = failureComment(runWith([]), error, reason);
    expect(body).toContain(
      '\nReason: pass test: still failing after 3 attempts — Step test failed (exit 1): npm test\n',
    );
    expect(body).toContain(`<details><summary>Whole reason</summary>\n\n\`\`\`text\n${reason}\n\`\`\``);
    expect(failureComment(runWith([]), error, 'the agent changed nothing')).not.toContain('<details>');
  });
});

describe('successComment', () => {
  it('counts the checks and names a step failing on the base commit too', () => {
    const run = runWith([
      check(),
      check({ step: 'lint', command: ['npm', 'run', 'lint'], exit_code: 2, passed: false, preexisting: true }),
    ]);
    const body = successComment(run, { number: 3, url: 'https://example.test/pull/3', draft: false });
    expect(body).toContain('\n- checks: 1 passed, 1 failing on the base commit too (pre-existing)\n');
    expect(body).toContain(
      '\n- lint (`npm run lint`): failing on the base commit too (pre-existing, not caused by this change)\n',
    );
    expect(successComment(runWith([]), { number: 3, url: 'u', draft: false })).not.toContain('checks');
  });

  it('says a check that could not run checked nothing, apart from pre-existing ones', () => {
    const run = runWith([
      check(),
      check({
        step: 'lint',
        command: ['make', 'lint'],
        exit_code: 2,
        passed: false,
        preexisting: true,
        unverifiable: true,
      }),
    ]);
    const body = successComment(run, { number: 3, url: 'https://example.test/pull/3', draft: true });
    expect(body).toContain('\n- checks: 1 passed, 1 could not run (unverifiable)\n');
    expect(body).not.toContain('pre-existing');
    expect(body).toContain(
      '\n- lint (`make lint`): could not run on this worker (it fails the same way on the base commit): it did not check this change\n',
    );
  });
});
