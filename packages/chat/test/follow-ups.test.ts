import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createJob, maxBodyChars, newRun, parseJob, type RunRecord } from '@codefleet/core';
import { LocalQueue } from '@codefleet/queue';
import {
  createFollowUpProcessor,
  followUpDelayMs,
  followUpJob,
  followUpOfJob,
  type ChatMessage,
  type ChatOutcome,
  type ChatService,
  type Deferred,
  type FollowUpProcessor,
  type PermissionCheck,
} from '../src/index.js';
import { capturingLogger, messageOf, openHarness, type Harness } from './helpers.js';

// The classifier is off and every message here is an explicit /code: no model server is asked.
const noModel = 'http://127.0.0.1:9';
const permission: PermissionCheck = async () => 'write';

describe("chat follow-ups kept while the thread's job runs", () => {
  let h: Harness;
  let followUps: LocalQueue;
  let service: ChatService;
  let told: { message: ChatMessage; outcome: ChatOutcome }[];
  let clock: number;
  const open = (extra: { retryDelayMs?: (attempt: number) => number } = {}): FollowUpProcessor =>
    createFollowUpProcessor({
      followUps,
      chat: service,
      log: capturingLogger().log,
      now: () => clock,
      retryDelayMs: () => 0,
      onOutcome: async (message, outcome) => void told.push({ message, outcome }),
      ...extra,
    });
  beforeEach(async () => {
    h = await openHarness(noModel, permission);
    followUps = new LocalQueue({
      backend: 'local',
      path: join(h.dir.path, 'followups.sqlite'),
      name: 'jobs-chat-followups',
      leaseMs: 60_000,
      maxAttempts: 1_000,
    });
    service = h.service();
    told = [];
    clock = Date.parse('2026-11-24T08:00:00Z');
  });
  afterEach(async () => {
    await followUps.close();
    await h.close();
  });

  /** Queues the thread's first job and lets a "worker" start it. */
  const startThreadJob = async (): Promise<RunRecord> => {
    expect(await service.handle(messageOf('/code add a flag repo=acme/api'))).toMatchObject({
      kind: 'enqueued',
      jobId: 'job-1',
    });
    const job = (await h.take())!;
    const started = newRun(job, { runId: job.id, now: new Date('2026-11-24T08:05:00Z') });
    await h.store.save({ ...started, stage: 'implementing' });
    return started;
  };
  const finish = async (started: RunRecord) => {
    const doneAt = '2026-11-24T08:10:00.000Z';
    await h.store.save({
      ...started,
      stage: 'done',
      outcome: 'succeeded',
      branch: 'ai/chat-job-1',
      stages: [...started.stages, { stage: 'done', at: doneAt, attempt: 0 }],
      updated_at: doneAt,
    });
  };
  const followUp = messageOf('/code also document it', {
    messageId: '1700000000.000300',
    statusMessageId: '1700000000.000301',
    deferFollowUp: true,
  });

  it('a follow-up to a running job is kept (once, however often delivered) and queued on its branch when the job ends', async () => {
    const started = await startThreadJob();
    const processor = open();
    for (let i = 0; i < 2; i += 1) {
      const outcome = await service.handle(followUp);
      expect(outcome).toMatchObject({ kind: 'deferred', jobId: 'job-1', repo: 'acme/api', route: { name: 'CODE' } });
      await processor.defer(followUp, outcome as Deferred);
    }
    expect((await h.queue.stats()).depth).toBe(0);
    expect((await followUps.stats()).depth).toBe(1);

    // Still running: kept for a later try, nobody told anything new.
    expect(await processor.processNext()).toMatchObject({ settled: 'retrying', delayMs: 0 });
    expect((await h.queue.stats()).depth).toBe(0);
    expect(told).toEqual([]);

    await finish(started);
    const done = await processor.processNext();
    expect(done).toMatchObject({
      settled: 'acked',
      outcome: { kind: 'enqueued', jobId: 'job-2', deduplicated: false, repo: 'acme/api' },
    });
    const next = await h.take();
    expect(next).toMatchObject({
      branch: 'ai/chat-job-1',
      source: { kind: 'chat', message_id: '1700000000.000300', status_message_id: '1700000000.000301' },
    });
    expect(next?.body).toMatch(/^Follow-up in the same chat thread to job job-1: continue on branch ai\/chat-job-1/);
    expect(told).toEqual([{ message: followUp, outcome: done!.outcome }]);
    expect(h.requester.reports.filter((r) => r.kind === 'queued').map((r) => r.job.id)).toEqual(['job-1', 'job-2']);
    expect(await followUps.stats()).toMatchObject({ depth: 0, inFlight: 0, completed: 1 });
    // The message is now bound to its job: a late redelivery makes nothing new.
    expect(await service.handle(followUp)).toMatchObject({ kind: 'enqueued', jobId: 'job-2', deduplicated: true });
    expect(await processor.processNext()).toBeUndefined();
  });

  it('waits with the injected backoff, 10 s doubling to 5 minutes by default', async () => {
    await startThreadJob();
    const asked: number[] = [];
    const processor = open({ retryDelayMs: (attempt) => (asked.push(attempt), 0) });
    await processor.defer(followUp, (await service.handle(followUp)) as Deferred);
    await processor.processNext();
    await processor.processNext();
    expect(asked).toEqual([1, 2]);
    expect([1, 2, 3, 5, 6, 50].map(followUpDelayMs)).toEqual([10_000, 20_000, 40_000, 160_000, 300_000, 300_000]);
  });

  it('a follow-up still waiting a day after it was kept is dead-lettered and the sender told it was not started', async () => {
    await startThreadJob();
    const processor = open();
    await processor.defer(followUp, (await service.handle(followUp)) as Deferred);
    clock += 24 * 60 * 60_000 + 1;
    const given = await processor.processNext();
    expect(given).toMatchObject({ settled: 'dead_lettered', outcome: { kind: 'refused', route: { name: 'CODE' } } });
    expect(told).toHaveLength(1);
    expect(told[0]?.outcome).toMatchObject({
      kind: 'refused',
      text: expect.stringContaining('job job-1 of this thread'),
    });
    expect((told[0]?.outcome as { text: string }).text).toContain("didn't start it");
    const [dead] = await followUps.deadLetters();
    expect(dead?.reason).toMatch(/given up 1440 min after it was kept: job job-1 had not ended/);
    expect((await h.queue.stats()).depth).toBe(0);
  });

  it('a message whose producer keeps nothing is still turned back with a reply', async () => {
    await startThreadJob();
    const { deferFollowUp: _, ...plain } = followUp;
    expect(await service.handle(plain)).toMatchObject({
      kind: 'reply',
      text: expect.stringContaining('job-1 of this thread is still queued or running'),
    });
  });

  it('records are bounded and read back checked; an unreadable one is dead-lettered', async () => {
    const deferred: Deferred = {
      kind: 'deferred',
      jobId: 'job-1',
      repo: 'acme/api',
      route: { name: 'CODE', source: 'command', confidence: 1, reason: 'explicit /code' },
    };
    const long = { ...followUp, text: '"'.repeat(maxBodyChars) };
    const job = followUpJob(long, deferred, new Date());
    expect(job.body.length).toBeLessThanOrEqual(maxBodyChars);
    expect(followUpOfJob(job)).toMatchObject({ deferred, message: { messageId: followUp.messageId } });
    expect(job.source).toEqual({ kind: 'record', of: 'chat-follow-up' });
    // A record queued before kind `record` (an api job) is read back the same.
    const legacy = parseJob({ ...job, source: { kind: 'api', request_id: `chat-followup:${job.id.slice(9)}` } });
    expect(followUpOfJob(legacy)).toEqual(followUpOfJob(job));
    expect(followUpJob(followUp, deferred, new Date()).id).toBe(
      followUpJob({ ...followUp, text: 'other' }, deferred, new Date()).id,
    );

    await followUps.enqueue(
      createJob(
        { repo: 'acme/api', source: { kind: 'cli' }, title: 'junk', body: '{"v":1,"message":{}}', requested_by: 'x' },
        { id: 'junk', now: new Date() },
      ),
    );
    expect(await open().processNext()).toMatchObject({
      settled: 'dead_lettered',
      reason: expect.stringContaining('not a chat follow-up'),
    });
    expect(told).toEqual([]);
  });
});
