import { describe, expect, it } from '@jest/globals';
import type { RunRecord } from '../src/run.js';
import { advance, finish, newRun, setAnswer, setPublication, startAttempt } from '../src/run-update.js';
import {
  needsPullRequestState,
  statusLabel,
  taskFactsOf,
  taskStatus as statusOf,
  taskStatusesOf as statusesOf,
  type PullRequestFact,
} from '../src/task-status.js';

const taskStatus = (run: RunRecord | undefined, pr?: PullRequestFact, why?: string) =>
  statusOf(run === undefined ? undefined : taskFactsOf(run), pr, why);
const needs = (run: RunRecord) => needsPullRequestState(taskFactsOf(run));
import { at, jobFixture } from './fixtures.js';

const queued = () => newRun(jobFixture(), { runId: 'run-1', now: at(0) });
const running = () => advance(startAttempt(queued(), { workerId: 'w1', now: at(1) }), 'preparing', { now: at(2) });
const published = (): RunRecord => {
  const r = ['planning', 'implementing', 'testing', 'validating', 'publishing'] as const;
  const run = r.reduce((acc, stage, i) => advance(acc, stage, { now: at(3 + i) }), running());
  return setPublication(
    run,
    { branch: 'ai/x', pullRequest: { number: 12, head: 'ai/x', base: 'main', draft: false } },
    { now: at(9) },
  );
};

describe('taskStatus', () => {
  it('is open for a job no worker has claimed', () => {
    expect(taskStatus(undefined)).toEqual({ status: 'open', certain: true, note: 'queued, not yet claimed' });
    expect(taskStatus(queued()).status).toBe('open');
  });

  it('is in_progress while a worker has it or it waits to retry', () => {
    expect(taskStatus(running())).toMatchObject({ status: 'in_progress', note: 'preparing' });
    expect(taskStatus(advance(running(), 'retry_wait', { now: at(3) })).status).toBe('in_progress');
  });

  it('follows the pull request of a succeeded run: open, merged, closed', () => {
    const run = finish(published(), 'succeeded', { now: at(10) });
    expect(taskStatus(run, 'open')).toEqual({ status: 'open', certain: true, note: 'PR #12 awaiting review' });
    expect(taskStatus(run, 'merged')).toMatchObject({ status: 'done', certain: true });
    expect(taskStatus(run, 'closed')).toMatchObject({ status: 'closed', note: 'PR #12 closed without merge' });
  });

  it('says open? and why when the PR state could not be read', () => {
    const run = finish(published(), 'succeeded', { now: at(10) });
    const view = taskStatus(run, undefined, 'forge unreachable');
    expect(view).toEqual({ status: 'open', certain: false, note: 'PR #12: forge unreachable' });
    expect(statusLabel(view)).toBe('open?');
  });

  it('counts a merged draft PR whose DoD failed as done, an unmerged one as dod_failed', () => {
    const run = finish(published(), 'dod_failed', { now: at(10), dodResult: 'failed' });
    expect(taskStatus(run, 'merged').status).toBe('done');
    expect(taskStatus(run, 'closed').status).toBe('closed');
    expect(taskStatus(run, 'open')).toMatchObject({ status: 'dod_failed', certain: true });
  });

  it('is failed, cancelled as the run ended; cancelled wins over a merged PR', () => {
    const failed = finish(running(), 'failed', {
      now: at(5),
      error: { code: 'agent_crashed', verdict: 'permanent', message: 'x' },
    });
    expect(taskStatus(failed)).toMatchObject({ status: 'failed', note: 'agent_crashed' });
    expect(taskStatus(finish(running(), 'no_changes', { now: at(5) }))).toMatchObject({
      status: 'failed',
      note: 'no changes',
    });
    const cancelled = finish(published(), 'cancelled', { now: at(10) });
    expect(taskStatus(cancelled, 'merged').status).toBe('cancelled');
    expect(needs(cancelled)).toBe(false);
  });

  it('is done for an answered job, which has no PR; asks the forge only for finished runs with a PR', () => {
    const { pull_request: _pr, ...rest } = finish(
      setAnswer(published(), 'It is in src/a.ts.', { now: at(9) }),
      'succeeded',
      { now: at(10) },
    );
    const answered: RunRecord = rest;
    expect(taskStatus(answered)).toMatchObject({ status: 'done', note: 'finished without a pull request' });
    expect(needs(answered)).toBe(false);
    expect(needs(published())).toBe(false);
    expect(needs(finish(published(), 'succeeded', { now: at(10) }))).toBe(true);
  });
});

describe('taskStatusesOf', () => {
  const summary = (number: number | undefined, outcome?: 'succeeded') => ({
    repo: 'acme/w',
    stage: outcome === undefined ? ('implementing' as const) : ('done' as const),
    ...(outcome === undefined ? {} : { outcome }),
    ...(number === undefined ? {} : { pullRequest: { number } }),
  });

  it('asks once for the finished runs with a PR, in order', async () => {
    const asked: unknown[] = [];
    const views = await statusesOf(
      [summary(undefined), summary(3, 'succeeded'), summary(4, 'succeeded')],
      async (keys) => {
        asked.push(keys);
        return new Map([
          ['acme/w#3', { state: 'merged' as const }],
          ['acme/w#4', { why: 'timed out' }],
        ]);
      },
    );
    expect(asked).toEqual([
      [
        { repo: 'acme/w', number: 3 },
        { repo: 'acme/w', number: 4 },
      ],
    ]);
    expect(views.map(statusLabel)).toEqual(['in_progress', 'done', 'open?']);
    expect(views[2]?.note).toBe('PR #4: timed out');
  });

  it('never rejects: a reader that throws, or none, gives open? with the reason', async () => {
    const views = await statusesOf([summary(3, 'succeeded')], async () => {
      throw new Error('no token');
    });
    expect(views[0]).toEqual({ status: 'open', certain: false, note: 'PR #3: forge not readable: no token' });
    expect((await statusesOf([summary(3, 'succeeded')]))[0]?.note).toBe('PR #3: forge not asked');
  });
});
