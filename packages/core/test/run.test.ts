import { describe, expect, it } from '@jest/globals';
import { CodefleetError, InvalidTransitionError } from '../src/errors.js';
import type { RunRecord } from '../src/run.js';
import { parseRun } from '../src/run.js';
import {
  addAgentRun,
  addVerification,
  advance,
  endAttempt,
  finish,
  newRun,
  setAcceptanceCriteria,
  setPublication,
  startAttempt,
} from '../src/run-update.js';
import type { Stage } from '../src/stage.js';
import { boundTail } from '../src/text.js';
import { agentRunFixture, at, deepFreeze, jobFixture, verificationFixture } from './fixtures.js';

function throughPublishing(): RunRecord {
  let run = newRun(jobFixture(), { runId: 'run-1', now: at(0) });
  run = startAttempt(run, { workerId: 'mini-1', now: at(1) });
  const path: Stage[] = ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'];
  path.forEach((stage, i) => {
    run = advance(run, stage, { now: at(2 + i) });
  });
  return run;
}

describe('run record', () => {
  it('starts queued with an empty history', () => {
    const run = newRun(jobFixture(), { runId: 'run-1', now: at(0) });
    expect(run.stage).toBe('queued');
    expect(run.stages).toEqual([{ stage: 'queued', at: '2024-05-01T10:00:00.000Z', attempt: 0 }]);
    expect([run.attempts, run.agent_runs, run.verification]).toEqual([[], [], []]);
    expect(run.created_at).toBe(run.updated_at);
  });

  it('never mutates its input', () => {
    const original = deepFreeze(throughPublishing());
    const snapshot = JSON.stringify(original);
    const after = [
      advance(original, 'done', { now: at(50), note: 'merged' }),
      addAgentRun(original, agentRunFixture(), { now: at(50) }),
      addVerification(original, verificationFixture(), { now: at(50) }),
      endAttempt(original, { now: at(50), outcome: 'succeeded' }),
      startAttempt(original, { workerId: 'mini-2', now: at(50) }),
      setAcceptanceCriteria(original, ['responds 200'], { now: at(50) }),
      setPublication(
        original,
        { branch: 'ai/issue-7', pullRequest: { number: 3, head: 'ai/issue-7', base: 'main', draft: false } },
        { now: at(50) },
      ),
      finish(original, 'succeeded', { now: at(50), dodResult: 'passed' }),
    ];
    expect(JSON.stringify(original)).toBe(snapshot);
    for (const next of after) {
      expect(next).not.toBe(original);
      expect(next.updated_at).toBe('2024-05-01T10:00:50.000Z');
    }
  });

  it('records stages with the attempt number and refuses invalid moves', () => {
    const run = throughPublishing();
    expect(run.stages.map((s) => [s.stage, s.attempt])).toEqual([
      ['queued', 0],
      ['preparing', 1],
      ['planning', 1],
      ['implementing', 1],
      ['testing', 1],
      ['validating', 1],
      ['publishing', 1],
    ]);
    expect(() => advance(run, 'planning', { now: at(30) })).toThrow(InvalidTransitionError);
    const queued = newRun(jobFixture(), { runId: 'r', now: at(0) });
    expect(() => advance(queued, 'implementing', { now: at(1) })).toThrow(
      'invalid stage transition: queued -> implementing',
    );
  });

  it('round-trips through JSON and parseRun', () => {
    let run = throughPublishing();
    run = setAcceptanceCriteria(run, ['GET /healthz returns 200'], { now: at(20) });
    run = addAgentRun(
      run,
      agentRunFixture({ exit_code: null, signal: 'SIGKILL', timed_out: true, outcome: 'timeout' }),
      { now: at(21) },
    );
    run = addVerification(run, verificationFixture({ passed: false, exit_code: 1 }), { now: at(22) });
    run = setPublication(
      run,
      {
        branch: 'ai/issue-7',
        pullRequest: {
          number: 3,
          url: 'https://github.com/octo/repo/pull/3',
          head: 'ai/issue-7',
          base: 'main',
          draft: true,
        },
      },
      { now: at(23) },
    );
    run = finish(run, 'dod_failed', {
      now: at(24),
      dodResult: 'failed',
      error: { code: 'dod_failed', verdict: 'permanent', message: 'npm test failed' },
    });
    const copy = parseRun(JSON.parse(JSON.stringify(run)));
    expect(copy).toStrictEqual(run);
    // Plain JSON: no Dates, no undefined-valued keys, nothing lost on the wire.
    expect(JSON.parse(JSON.stringify(run))).toStrictEqual(run);
    expect(parseRun(copy)).toStrictEqual(copy);
  });

  it('refuses a malformed stored record, naming the fields', () => {
    const run = JSON.parse(JSON.stringify(throughPublishing()));
    run.stage = 'sleeping';
    run.attempts[0].n = 0;
    try {
      parseRun(run);
      throw new Error('expected a throw');
    } catch (err) {
      expect(err).toBeInstanceOf(CodefleetError);
      expect((err as CodefleetError).code).toBe('invalid_run');
      expect((err as Error).message).toContain('stage: expected one of');
      expect((err as Error).message).toContain('attempts[0].n: expected positive integer, got 0');
    }
  });

  it('numbers attempts and closes an abandoned one', () => {
    let run = throughPublishing();
    run = startAttempt(run, { workerId: 'mini-2', now: at(40) });
    expect(run.attempts).toEqual([
      {
        n: 1,
        worker_id: 'mini-1',
        started_at: '2024-05-01T10:00:01.000Z',
        ended_at: '2024-05-01T10:00:40.000Z',
        outcome: 'abandoned',
      },
      { n: 2, worker_id: 'mini-2', started_at: '2024-05-01T10:00:40.000Z' },
    ]);
    run = endAttempt(run, {
      now: at(41),
      outcome: 'retrying',
      error: { code: 'network', verdict: 'transient', message: 'reset', retryAfterMs: 5 },
    });
    expect(run.attempts[1]).toMatchObject({
      outcome: 'retrying',
      error: { code: 'network', verdict: 'transient', message: 'reset' },
    });
    expect(run.attempts[1]?.error).not.toHaveProperty('retryAfterMs');
    expect(() => endAttempt(run, { now: at(42), outcome: 'failed' })).toThrow('has no open attempt');
  });

  it("numbers an attempt at least by the queue's delivery count, and never backwards", () => {
    // Delivery 3 of a job whose second attempt never reached the record.
    let run = startAttempt(throughPublishing(), { workerId: 'mini-2', now: at(40), delivery: 3 });
    expect(run.attempts.map((a) => a.n)).toEqual([1, 3]);
    run = advance(run, 'retry_wait', { now: at(41) });
    expect(run.stages.at(-1)?.attempt).toBe(3);
    // A queue that gave a released delivery's count back says 3 again: the record says 4.
    run = startAttempt(run, { workerId: 'mini-3', now: at(42), delivery: 3 });
    expect(run.attempts.map((a) => a.n)).toEqual([1, 3, 4]);
  });

  it('goes through retry_wait and a fresh attempt starts at preparing', () => {
    let run = throughPublishing();
    run = advance(run, 'retry_wait', { now: at(30), note: 'push: ECONNRESET' });
    run = endAttempt(run, { now: at(30), outcome: 'retrying' });
    run = startAttempt(run, { workerId: 'mini-2', now: at(40) });
    run = advance(run, 'preparing', { now: at(40) });
    expect(run.stages.slice(-2)).toEqual([
      { stage: 'retry_wait', at: '2024-05-01T10:00:30.000Z', attempt: 1, note: 'push: ECONNRESET' },
      { stage: 'preparing', at: '2024-05-01T10:00:40.000Z', attempt: 2 },
    ]);
  });

  it('bounds output tails', () => {
    const run = addAgentRun(throughPublishing(), agentRunFixture({ output_tail: 'é'.repeat(10_000) }), { now: at(30) });
    const tail = run.agent_runs[0]?.output_tail ?? '';
    expect(tail.startsWith('…[truncated 11,808 bytes]\n')).toBe(true);
    const small = addVerification(run, verificationFixture({ output_tail: 'abcdef' }), {
      now: at(31),
      maxTailBytes: 2,
    });
    expect(small.verification[0]?.output_tail).toBe('…[truncated 4 bytes]\nef');
  });

  it("says how much a runner's tail really dropped when the record bounds it again", () => {
    // What the process runner hands over for a 70 KB output: its own 8 KiB tail and marker.
    const runnerTail = boundTail('x'.repeat(70_000), 8192);
    let run = addAgentRun(throughPublishing(), agentRunFixture({ output_tail: runnerTail }), { now: at(30) });
    run = addVerification(run, verificationFixture({ output_tail: runnerTail }), { now: at(31) });
    for (const tail of [run.agent_runs[0]?.output_tail, run.verification[0]?.output_tail]) {
      expect(tail).toBe(`…[truncated 61,808 bytes]\n${'x'.repeat(8192)}`);
    }
    const smaller = addVerification(run, verificationFixture({ output_tail: runnerTail }), {
      now: at(32),
      maxTailBytes: 1000,
    });
    expect(smaller.verification[1]?.output_tail).toBe(`…[truncated 69,000 bytes]\n${'x'.repeat(1000)}`);
  });

  it('keeps updated_at from going backwards when clocks disagree', () => {
    const run = throughPublishing();
    expect(advance(run, 'done', { now: at(-100) }).updated_at).toBe(run.updated_at);
  });

  it.each([
    ['succeeded', 'done', 'succeeded'],
    ['dod_failed', 'done', 'failed'],
    ['failed', 'failed', 'failed'],
    ['no_changes', 'failed', 'failed'],
    ['cancelled', 'cancelled', 'cancelled'],
  ] as const)('finish(%s) from publishing ends in %s', (outcome, stage, attemptOutcome) => {
    const run = finish(throughPublishing(), outcome, { now: at(30) });
    expect([run.outcome, run.stage, run.attempts[0]?.outcome, run.attempts[0]?.ended_at]).toEqual([
      outcome,
      stage,
      attemptOutcome,
      '2024-05-01T10:00:30.000Z',
    ]);
  });

  it('finish with dod_failed before publishing fails the run, and a finished run cannot finish again', () => {
    let run = newRun(jobFixture(), { runId: 'r', now: at(0) });
    run = startAttempt(run, { workerId: 'w', now: at(1) });
    run = advance(run, 'preparing', { now: at(2) });
    run = finish(run, 'dod_failed', { now: at(3), dodResult: 'timeout' });
    expect([run.stage, run.dod_result]).toEqual(['failed', 'timeout']);
    expect(() => finish(run, 'succeeded', { now: at(4) })).toThrow(InvalidTransitionError);
  });
});
