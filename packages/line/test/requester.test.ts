import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { classify, CodefleetError, createJob, finish, newRun, startAttempt, type Job } from '@codefleet/core';
import { createLogger } from '@codefleet/log';
import { requesterConformance } from '@codefleet/requester/conformance';
import { startLineStandIn, type LineStandIn } from '@codefleet/testkit';
import { createLineRequester, retryKeyOf } from '../src/index.js';
import { lineConfig } from './helpers.js';

const secret = 'sk-test-0123456789abcdef';
const noWait = async () => {};

function lineJob(to: string, options: { id?: string; title?: string } = {}): Job {
  const id = options.id ?? `line-${randomBytes(3).toString('hex')}`;
  return createJob(
    {
      repo: 'acme/widgets',
      title: options.title ?? 'Fix the parser',
      requested_by: 'alice',
      source: { kind: 'chat', platform: 'line', channel: to, thread_id: id, message_id: id },
    },
    { id, now: new Date() },
  );
}

let line: LineStandIn;
beforeAll(async () => {
  line = await startLineStandIn();
});
afterAll(async () => {
  await line?.close();
});

requesterConformance({
  name: 'LINE push messages (our client against the LINE stand-in)',
  open: async () => {
    const to = `U${randomBytes(16).toString('hex')}`;
    const requester = createLineRequester({ config: lineConfig(line), secrets: [secret], sleep: noWait });
    return {
      requester,
      job: (options) => lineJob(to, options),
      foreignJob: createJob(
        {
          repo: 'acme/widgets',
          source: { kind: 'chat', platform: 'slack', channel: 'C1', thread_id: '1.2' },
          title: 't',
          requested_by: 'U1',
        },
        { id: 'slack-1', now: new Date() },
      ),
      observe: async () => ({ messages: line.pushes.filter((p) => p.to === to).flatMap((p) => p.texts), marks: [] }),
      secret,
      // LINE shows a text message as typed: no Markdown, no mention syntax in plain text and no
      // link markup; a bare URL is only auto-linked as what it visibly is. Nothing in the
      // answer can become live syntax here, so no fragment is active.
      activeSyntax: [],
      dispose: async () => {},
    };
  },
});

const now = new Date('2026-11-24T08:00:00Z');
const failedRun = (job: Job) => {
  const error = classify(new CodefleetError('test_failed', 'tests failed', { verdict: 'permanent' }));
  return {
    run: finish(startAttempt(newRun(job, { runId: job.id, now }), { workerId: 'w', now }), 'failed', { now, error }),
    error,
  };
};

describe('LINE requester', () => {
  it('pushes only final reports, each with the retry key of its job and kind', async () => {
    const to = `U${randomBytes(16).toString('hex')}`;
    const job = lineJob(to);
    const requester = createLineRequester({ config: lineConfig(line), sleep: noWait });
    const before = line.exchanges.length;
    await requester.report({ kind: 'queued', job });
    await requester.report({ kind: 'started', job, attempt: 1 });
    await requester.report({ kind: 'progress', job, stage: 'testing' });
    expect(line.exchanges.length).toBe(before);
    const { run, error } = failedRun(job);
    await requester.report({ kind: 'failed', job, run, error, reason: 'tests failed' });
    const pushes = line.pushes.filter((p) => p.to === to);
    expect(pushes).toHaveLength(1);
    expect(pushes[0]?.retryKey).toBe(retryKeyOf('report', job.id, 'failed'));
    expect(pushes[0]?.texts[0]).toContain('Reason: tests failed');
  });

  it('retries a push after a 500 with the same retry key, and a 409 for an accepted key is success', async () => {
    const to = `U${randomBytes(16).toString('hex')}`;
    const job = lineJob(to);
    const requester = createLineRequester({ config: lineConfig(line), sleep: noWait });
    line.failNext('/v2/bot/message/push', 500);
    await requester.report({ kind: 'cancelled', job, by: 'carol' });
    await requester.report({ kind: 'cancelled', job, by: 'carol' });
    const key = retryKeyOf('report', job.id, 'cancelled');
    expect(line.exchanges.filter((e) => e.retryKey === key).map((e) => e.status)).toEqual([500, 200, 409]);
    expect(line.pushes.filter((p) => p.to === to)).toHaveLength(1);
  });

  it('a used-up monthly quota is a logged, permanent failure', async () => {
    const quotaLine = await startLineStandIn();
    try {
      const lines: string[] = [];
      const log = createLogger({ destination: { write: (l: string) => void lines.push(l) } });
      const requester = createLineRequester({ config: lineConfig(quotaLine), log, sleep: noWait });
      quotaLine.exhaustQuota();
      const job = lineJob(`U${randomBytes(16).toString('hex')}`);
      const failure = await requester.report({ kind: 'cancelled', job, by: 'carol' }).catch((e: unknown) => e);
      expect(classify(failure)).toMatchObject({ code: 'forge_rejected', verdict: 'permanent' });
      expect(quotaLine.exchanges.map((e) => e.status)).toEqual([429]);
      expect(lines.join('\n')).toContain('line.quota_exhausted');
    } finally {
      await quotaLine.close();
    }
  });

  it('a wrong access token is refused (401) as forge_rejected, without retries', async () => {
    const wrong = createLineRequester({
      config: { ...lineConfig(line), channel_access_token: 'wrong' },
      sleep: noWait,
    });
    const job = lineJob(`U${randomBytes(16).toString('hex')}`);
    const before = line.exchanges.length;
    const failure = await wrong.report({ kind: 'cancelled', job, by: 'carol' }).catch((e: unknown) => e);
    expect(classify(failure).code).toBe('forge_rejected');
    expect(line.exchanges.slice(before).map((e) => e.status)).toEqual([401]);
  });

  it("keeps a long answer within LINE's 5000-character text limit", async () => {
    const to = `U${randomBytes(16).toString('hex')}`;
    const job = lineJob(to);
    const requester = createLineRequester({ config: lineConfig(line), sleep: noWait });
    // The run only travels with the report; its stage does not matter here.
    const { run } = failedRun(job);
    await requester.report({ kind: 'answered', job, run, answer: 'word '.repeat(4_000) });
    const text = line.pushes.find((p) => p.to === to)?.texts[0] ?? '';
    expect(text.length).toBeGreaterThan(1000);
    expect(text.length).toBeLessThanOrEqual(5000);
  });
});
