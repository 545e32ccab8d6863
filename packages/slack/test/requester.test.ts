import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import {
  advance,
  classify,
  CodefleetError,
  createJob,
  finish,
  newRun,
  startAttempt,
  type Job,
  type RunRecord,
} from '@codefleet/core';
import { jobReporter, type JobReporterOptions } from '@codefleet/requester';
import { requesterConformance } from '@codefleet/requester/conformance';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir, startSlackStandIn, waitFor, type SlackStandIn } from '@codefleet/testkit';
import { createSlackClient, createSlackRequester } from '../src/index.js';
import { ids, openHarness, slackConfig, type Harness } from './support/harness.js';

const secret = 'sk-test-0123456789abcdef';
const marks = { running: 'hourglass_flowing_sand', done: 'white_check_mark', failed: 'x' };
const now = () => new Date('2026-11-24T08:00:00Z');
const runOf = (job: Job): RunRecord =>
  startAttempt(newRun(job, { runId: job.id, now: now() }), { workerId: 'w1', now: now() });
const failedRun = (job: Job, code: 'test_failed' | 'lease_lost') => {
  const error = classify(new CodefleetError(code, `${code} happened`, { verdict: 'permanent' }));
  return { error, run: finish(runOf(job), 'failed', { now: now(), error }) };
};

// The requester (the real @slack/web-api client) against the Slack stand-in.
let standIn: SlackStandIn;
beforeAll(async () => {
  standIn = await startSlackStandIn();
});
afterAll(async () => {
  await standIn?.close();
});

requesterConformance({
  name: 'Slack thread (@slack/web-api against the stand-in)',
  open: async () => {
    const dir = await createTempDir('slack-requester');
    const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
    const channel = `C0${randomBytes(4).toString('hex').toUpperCase()}`;
    const root = standIn.mention({ channel, user: ids.alice, text: `<@${standIn.botUserId}> fix the parser` });
    const requester = createSlackRequester({
      client: createSlackClient(slackConfig(standIn, 'socket'), { retryConfig: { retries: 0 } }),
      store,
      secrets: [secret],
    });
    const chatJob = (platform: string, options: { id?: string; title?: string } = {}) =>
      createJob(
        {
          repo: 'acme/widgets',
          source: { kind: 'chat', platform, channel, thread_id: root.ts, message_id: root.ts },
          title: options.title ?? 'Fix the parser',
          requested_by: 'alice-gh',
        },
        { id: options.id ?? `job-${randomBytes(3).toString('hex')}`, now: new Date() },
      );
    return {
      requester,
      job: (options) => chatJob('slack', options),
      foreignJob: chatJob('line'),
      observe: async () => ({
        messages: standIn
          .thread(channel, root.ts)
          .filter((m) => m.bot_id !== undefined)
          .map((m) => m.text),
        marks: Object.keys(standIn.message(channel, root.ts)?.reactions ?? {}).sort(),
      }),
      secret,
      activeSyntax: ['<!channel>', '<https://evil.example|here>', '\n```\n<!channel>'],
      marks,
      dispose: async () => {
        await store.close();
        await dir.dispose();
      },
    };
  },
});

describe('Slack thread of a job, from the mention to the final reply', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  /** A mention through the real Bolt app (Socket Mode) that became a job. */
  async function mentioned(text: string): Promise<{ job: Job; ts: string; statusTs: string }> {
    h = await openHarness('socket');
    const { ts, body } = h.slack.mention({
      channel: ids.repoChannel,
      user: ids.alice,
      text: `<@${h.slack.botUserId}> ${text}`,
    });
    await h.slack.socket.deliverEvent(body);
    const job = await waitFor(() => h!.jobs()[0], { what: 'the job' });
    await h.producer.idle();
    const statusTs = (job.source as { status_message_id: string }).status_message_id;
    return { job, ts, statusTs };
  }
  const thread = (ts: string) => h!.slack.thread(ids.repoChannel, ts);
  const reactions = (ts: string) => Object.keys(h!.slack.message(ids.repoChannel, ts)?.reactions ?? {});

  it('a pull request: the status message is edited as the job runs and the final reply links the PR', async () => {
    const { job, ts, statusTs } = await mentioned('fix the flaky parser test');
    expect(reactions(ts)).toEqual(['eyes']);
    await h!.requester.report({ kind: 'started', job, attempt: 1 });
    expect(reactions(ts)).toEqual(['hourglass_flowing_sand']);
    await h!.requester.report({ kind: 'progress', job, stage: 'testing' });
    const pullRequest = { number: 7, url: 'https://github.com/acme/widgets/pull/7', draft: false };
    const stages = ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const;
    const run = finish(
      stages.reduce((r, stage) => advance(r, stage, { now: now() }), runOf(job)),
      'succeeded',
      { now: now() },
    );
    await h!.requester.report({ kind: 'finished', job, run, pullRequest });
    await h!.requester.report({ kind: 'finished', job, run, pullRequest });
    const [root, status, final, ...rest] = thread(ts);
    expect(root?.user).toBe(ids.alice);
    expect(status?.ts).toBe(statusTs);
    expect(status?.edits.some((e) => e.includes('Queued as job'))).toBe(true);
    expect(status?.edits.some((e) => e.includes('testing'))).toBe(true);
    expect(status?.text).toContain(pullRequest.url);
    expect(final?.text).toContain(pullRequest.url);
    expect(rest).toEqual([]);
    expect(reactions(ts)).toEqual(['white_check_mark']);
  });

  it('a mention that becomes a pull request costs at most 12 Web API calls, no reaction removed that was not added', async () => {
    const { job, ts } = await mentioned('fix the flaky parser test');
    const since = h!.slack.calls.length - 3; // the producer's: eyes, the status message, queued
    expect(h!.slack.calls.slice(since).map((c) => c.method)).toEqual([
      'reactions.add',
      'chat.postMessage',
      'chat.update',
    ]);
    // The reports in the order the pipeline tells them, stages passing as in a quick job.
    const quiet = { warn: () => {} } as unknown as JobReporterOptions['log'];
    const reporter = jobReporter(h!.requester, { log: quiet });
    await reporter.tell({ kind: 'started', job, attempt: 1 });
    for (const stage of ['planning', 'implementing', 'testing', 'validating', 'publishing'] as const)
      await reporter.tell({ kind: 'progress', job, stage });
    const pullRequest = { number: 7, url: 'https://github.com/acme/widgets/pull/7', draft: false };
    const stages = ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const;
    const run = finish(
      stages.reduce((r, stage) => advance(r, stage, { now: now() }), runOf(job)),
      'succeeded',
      { now: now() },
    );
    await reporter.tell({ kind: 'finished', job, run, pullRequest });
    const calls = h!.slack.calls.slice(since);
    expect(calls.length).toBeLessThanOrEqual(12);
    const added = calls.filter((c) => c.method === 'reactions.add').map((c) => c.args.name);
    const removed = calls.filter((c) => c.method === 'reactions.remove').map((c) => c.args.name);
    expect(removed.every((name) => added.includes(name))).toBe(true);
    expect(removed).toEqual(['eyes', 'hourglass_flowing_sand']);
    expect(reactions(ts)).toEqual(['white_check_mark']);
  });

  it('a failure: the reason and how to retry, in the status message and a final reply', async () => {
    const { job, ts } = await mentioned('fix the flaky parser test');
    await h!.requester.report({ kind: 'started', job, attempt: 1 });
    const { error, run } = failedRun(job, 'test_failed');
    await h!.requester.report({
      kind: 'failed',
      job,
      run,
      error,
      reason: `3 tests failed; <!channel> token ${secret}`,
    });
    const final = thread(ts)[2]!;
    expect(final.text).toContain('test_failed');
    expect(final.text).toContain(`/ops retry ${job.id}`);
    expect(final.text).toContain('&lt;!channel&gt;');
    expect(final.text).not.toContain(secret);
    expect(reactions(ts)).toEqual(['x']);
  });

  it('a dead letter reported after the fact still reaches the thread', async () => {
    const { job, ts } = await mentioned('fix the flaky parser test');
    const { error, run } = failedRun(job, 'lease_lost');
    await h!.requester.report({ kind: 'failed', job, run, error, reason: 'dead-lettered after 3 attempts' });
    expect(
      thread(ts)
        .map((m) => m.text)
        .join('\n'),
    ).toContain('dead-lettered after 3 attempts');
    expect(thread(ts)).toHaveLength(3);
    expect(reactions(ts)).toEqual(['x']);
  });

  it('a cancel says who asked, and marks the request', async () => {
    const { job, ts } = await mentioned('fix the flaky parser test');
    await h!.requester.report({ kind: 'started', job, attempt: 1 });
    await h!.requester.report({ kind: 'cancelled', job, by: 'carol' });
    expect(thread(ts)[2]?.text).toMatch(/carol asked to cancel/);
    expect(reactions(ts)).toEqual(['no_entry_sign']);
  });

  it('a final reply that failed to post is posted by the next report, once', async () => {
    const { job, ts } = await mentioned('fix the flaky parser test');
    h!.slack.fail('chat.postMessage', { error: 'internal_error' });
    await expect(h!.requester.report({ kind: 'cancelled', job, by: 'carol' })).rejects.toMatchObject({
      code: 'forge_unavailable',
    });
    expect(thread(ts)).toHaveLength(2);
    await h!.requester.report({ kind: 'cancelled', job, by: 'carol' });
    await h!.requester.report({ kind: 'cancelled', job, by: 'carol' });
    expect(thread(ts)).toHaveLength(3);
  });

  it('a deleted status message is replaced once, and the replacement is edited from then on', async () => {
    const { job, ts, statusTs } = await mentioned('fix the flaky parser test');
    h!.slack.deleteMessage(ids.repoChannel, statusTs);
    await h!.requester.report({ kind: 'started', job, attempt: 1 });
    await h!.requester.report({ kind: 'progress', job, stage: 'testing' });
    const [, status, ...rest] = thread(ts);
    expect(rest).toEqual([]);
    expect(status?.text).toContain('testing');
    expect(status?.edits).toEqual([expect.stringContaining('attempt 1')]);
  });

  it("maps Slack's refusals and rate limits to stable codes", async () => {
    const store = new SqliteRunStore(':memory:');
    const job = createJob(
      {
        repo: 'acme/widgets',
        source: { kind: 'chat', platform: 'slack', channel: 'C0GONE', thread_id: '1.1' },
        title: 't',
        requested_by: 'a',
      },
      { id: 'j-gone', now: now() },
    );
    standIn.removeChannel('C0GONE');
    const requester = createSlackRequester({
      client: createSlackClient(slackConfig(standIn, 'socket'), {
        retryConfig: { retries: 0 },
        rejectRateLimitedCalls: true,
      }),
      store,
    });
    await expect(requester.report({ kind: 'started', job, attempt: 1 })).rejects.toMatchObject({
      code: 'forge_rejected',
      message: expect.stringContaining('channel_not_found'),
    });
    const live = { ...job, id: 'j-live', source: { ...job.source, channel: 'C0LIVE' } } as Job;
    standIn.fail('chat.postMessage', { status: 429, retryAfter: 7 });
    await expect(requester.report({ kind: 'started', job: live, attempt: 1 })).rejects.toMatchObject({
      code: 'rate_limited',
      retryAfterMs: 7_000,
    });
    await store.close();
  });
});
