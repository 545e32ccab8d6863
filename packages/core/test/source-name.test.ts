import { describe, expect, it } from '@jest/globals';
import { InvalidJobError } from '../src/errors.js';
import type { JobInput } from '../src/job.js';
import { ciFollowUpRequestId, createJob, followedPullRequest, parseJob } from '../src/job.js';
import { newRun } from '../src/run-update.js';
import { runSourceName, sourceName, sourceNames } from '../src/source-name.js';

const base = {
  id: 'job-1',
  idempotency_key: 'k',
  repo: 'octo/repo',
  title: 'Fix it',
  requested_by: 'alice',
  created_at: '2024-05-01T10:00:00Z',
} satisfies Omit<JobInput, 'source'>;

const job = (source: unknown) => parseJob({ ...base, source });

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof InvalidJobError) return err.message;
    throw err;
  }
  throw new Error('expected an InvalidJobError');
}

describe('job sources', () => {
  it('parses the new kinds and the follow-ups of an issue', () => {
    expect(job({ kind: 'ci', pull: 12 }).source).toEqual({ kind: 'ci', pull: 12 });
    expect(job({ kind: 'record', of: 'chat-inbox' }).source).toEqual({ kind: 'record', of: 'chat-inbox' });
    expect(job({ kind: 'issue', number: 3, via: 'review' }).source).toEqual({
      kind: 'issue',
      number: 3,
      via: 'review',
    });
  });

  it('still parses every legacy shape the producers wrote', () => {
    for (const request_id of ['ci:octo/repo#4', 'github-delivery:d1', 'chat-followup:ab', 'chat-inbox:cd'])
      expect(job({ kind: 'api', request_id }).source).toEqual({ kind: 'api', request_id });
    expect(job({ kind: 'issue', number: 3 }).source).toEqual({ kind: 'issue', number: 3 });
  });

  it('refuses a bad pull, record kind or via, naming the field', () => {
    expect(messageOf(() => job({ kind: 'ci', pull: 0 }))).toBe(
      'invalid job: source.pull: expected positive integer, got 0',
    );
    expect(messageOf(() => job({ kind: 'ci' }))).toBe('invalid job: source.pull: required (expected positive integer)');
    expect(messageOf(() => job({ kind: 'record', of: 'email' }))).toBe(
      'invalid job: source.of: expected one of "github-delivery", "chat-follow-up", "chat-inbox", got "email"',
    );
    expect(messageOf(() => job({ kind: 'issue', number: 1, via: 'push' }))).toMatch(/^invalid job: source\.via: /);
  });

  it('keeps the idempotency key of a CI follow-up on a pull request no issue owns', () => {
    const at = { id: 'job-9', now: new Date('2024-05-01T10:00:00Z') };
    const created = createJob({ ...base, idempotency_key: undefined, source: { kind: 'ci', pull: 7 } }, at);
    // The key such jobs had as `api` jobs, so a re-trigger converges with one queued before.
    expect(created.idempotency_key).toBe('octo/repo#pull-7');
    const followUp = { kind: 'issue', number: 7, via: 'ci' } as const;
    expect(createJob({ ...base, idempotency_key: undefined, source: followUp }, at).idempotency_key).toBe(
      'octo/repo#issue-7',
    );
  });

  it('finds the followed pull request in the new and the legacy shape', () => {
    expect(followedPullRequest(job({ kind: 'ci', pull: 5 }))).toBe(5);
    expect(followedPullRequest(job({ kind: 'api', request_id: ciFollowUpRequestId('octo/repo', 6) }))).toBe(6);
    expect(followedPullRequest(job({ kind: 'api', request_id: 'ci:other/repo#6' }))).toBeUndefined();
    expect(followedPullRequest(job({ kind: 'issue', number: 6, via: 'ci' }))).toBeUndefined();
  });
});

describe('sourceName', () => {
  const cases: [unknown, string][] = [
    [{ kind: 'issue', number: 1 }, 'github-issue'],
    [{ kind: 'issue', number: 1, via: 'ci' }, 'ci-follow-up'],
    [{ kind: 'issue', number: 1, via: 'review' }, 'review-follow-up'],
    [{ kind: 'ci', pull: 2 }, 'ci-follow-up'],
    [{ kind: 'eval', suite: 'a'.repeat(64), instance: 'x-1', config: 'oracle', trial: 1 }, 'eval'],
    [{ kind: 'chat', platform: 'slack', channel: 'C', thread_id: 't' }, 'slack'],
    [{ kind: 'chat', platform: 'line', channel: 'C', thread_id: 't' }, 'line'],
    [{ kind: 'chat', platform: 'http', channel: 'C', thread_id: 't' }, 'http-api'],
    [{ kind: 'chat', platform: 'teams', channel: 'C', thread_id: 't' }, 'teams'],
    [{ kind: 'cli' }, 'cli'],
    [{ kind: 'record', of: 'github-delivery' }, 'record'],
    [{ kind: 'api' }, 'http-api'],
    [{ kind: 'api', request_id: 'req-1', callback_url: 'https://ci.example/hook' }, 'http-api'],
    [{ kind: 'api', request_id: 'ci:octo/repo#3' }, 'ci-follow-up'],
    [{ kind: 'api', request_id: 'github-delivery:d1' }, 'record'],
    [{ kind: 'api', request_id: 'chat-followup:ab' }, 'record'],
    [{ kind: 'api', request_id: 'chat-inbox:cd' }, 'record'],
  ];

  it.each(cases)('names %j %s', (source, name) => {
    expect(sourceName(job(source))).toBe(name);
  });

  it('names a redriven run redrive, any other run by its job', () => {
    const now = new Date('2024-05-01T10:00:00Z');
    const slack = job({ kind: 'chat', platform: 'slack', channel: 'C', thread_id: 't' });
    expect(runSourceName(newRun(slack, { runId: 'job-1', now }))).toBe('slack');
    expect(runSourceName(newRun(slack, { runId: 'job-1.2', now, redrivenFrom: 'job-1' }))).toBe('redrive');
    expect(sourceNames).toContain('redrive');
  });
});
