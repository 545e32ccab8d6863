import { describe, expect, it } from '@jest/globals';
import type { RunRecord } from '../src/run.js';
import { advance, finish, newRun, setAnswer, setPublication, startAttempt } from '../src/run-update.js';
import { needsPullRequestState, statusLabel, taskStatus } from '../src/task-status.js';
import { at, jobFixture } from './fixtures.js';

const queued = () => newRun(jobFixture(), { runId: 'run-1', now: at(0) });
const running = () => advance(startAttempt(queued(), { workerId: 'w1', now: at(1) }), 'preparing', { now: at(2) });
const published = (): RunRecord => {
  const r = ['planning', 'implementing', 'testing', 'validating', 'publishing'] as const;
  const run = r.reduce((acc, stage, i) => advance(acc, stage, { now: at(3 + i) }), running());
  return setPublication(run, { branch: 'ai/x', pullRequest: { number: 12, head: 'ai/x', base: 'main', draft: false } }, { now: at(9) });
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
    const failed = finish(running(), 'failed', { now: at(5), error: { code: 'agent_crashed', verdict: 'permanent', message: 'x' } });
    expect(taskStatus(failed)).toMatchObject({ status: 'failed', note: 'agent_crashed' });
    expect(taskStatus(finish(running(), 'no_changes', { now: at(5) }))).toMatchObject({ status: 'failed', note: 'no changes' });
    const cancelled = finish(published(), 'cancelled', { now: at(10) });
    expect(taskStatus(cancelled, 'merged').status).toBe('cancelled');
    expect(needsPullRequestState(cancelled)).toBe(false);
  });

  it('is done for an answered job, which has no PR; asks the forge only for finished runs with a PR', () => {
    const { pull_request: _pr, ...rest } = finish(setAnswer(published(), 'It is in src/a.ts.', { now: at(9) }), 'succeeded', { now: at(10) });
    const answered: RunRecord = rest;
    expect(taskStatus(answered)).toMatchObject({ status: 'done', note: 'answered' });
    expect(needsPullRequestState(answered)).toBe(false);
    expect(needsPullRequestState(published())).toBe(false);
    expect(needsPullRequestState(finish(published(), 'succeeded', { now: at(10) }))).toBe(true);
  });
});
