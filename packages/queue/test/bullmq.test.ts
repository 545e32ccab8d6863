import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type RedisServer, sampleJob, startRedis } from '@codefleet/testkit';
import { BullmqQueue } from '../src/bullmq/bullmq-queue.js';
import { queueConformance } from './conformance/index.js';
import type { BullmqQueueSettings } from '../src/index.js';

// A real redis-server on a random loopback port, shared by this file's tests; every test
// gets its own queue name, so they never see each other's jobs.
let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const settingsFor = (leaseMs: number, maxAttempts: number): BullmqQueueSettings => ({
  backend: 'bullmq',
  url: redis.url,
  prefix: 'cf-test',
  name: `q-${randomUUID()}`,
  leaseMs,
  maxAttempts,
  pollMs: 20,
});

queueConformance({
  name: 'bullmq (real redis-server)',
  leaseMs: 1_000,
  capabilities: { priority: true, trim: true },
  open: async ({ leaseMs, maxAttempts, ...scheduling }) => {
    const settings = { ...settingsFor(leaseMs, maxAttempts), ...scheduling };
    const queue = new BullmqQueue(settings);
    return {
      queue,
      settings,
      injectRaw: (payload) => queue.injectRaw(payload),
      dispose: () => queue.close(),
    };
  },
});

describe('BullmqQueue specifics', () => {
  it('a key can be enqueued again once its job was removed from Redis', async () => {
    const settings = settingsFor(1_000, 2);
    const queue = new BullmqQueue(settings);
    const { Queue } = await import('bullmq');
    const raw = new Queue(settings.name, { connection: { url: redis.url }, prefix: settings.prefix });
    try {
      const first = sampleJob({ idempotency_key: 'acme/widgets#issue-9' });
      expect(await queue.enqueue(first)).toEqual({ id: first.id, deduplicated: false });
      // An operator cleans the queue by hand while the job waits.
      await raw.obliterate({ force: true });
      const again = sampleJob({ idempotency_key: 'acme/widgets#issue-9' });
      expect(await queue.enqueue(again)).toEqual({ id: again.id, deduplicated: false });
      const lease = await queue.claim({ workerId: 'w', waitMs: 2_000 });
      expect(lease?.job.id).toBe(again.id);
      await lease!.ack();
    } finally {
      await raw.close();
      await queue.close();
    }
  });

  it('the same job again, replayed or several times at once, is deduplicated as on SQLite: one caller added it', async () => {
    const queue = new BullmqQueue(settingsFor(1_000, 2));
    try {
      const job = sampleJob({ idempotency_key: 'github-delivery:d-1' });
      expect(await queue.enqueue(job)).toEqual({ id: job.id, deduplicated: false });
      expect(await queue.enqueue(job)).toEqual({ id: job.id, deduplicated: true });
      const twin = sampleJob({ idempotency_key: 'github-delivery:d-2' });
      const answers = await Promise.all(Array.from({ length: 6 }, () => queue.enqueue(twin)));
      expect(answers.filter((a) => !a.deduplicated)).toHaveLength(1);
      expect(answers.every((a) => a.id === twin.id)).toBe(true);
      expect((await queue.stats()).depth).toBe(2);
    } finally {
      await queue.close();
    }
  });

  it('keeps ids BullMQ would refuse (colons, plain numbers)', async () => {
    const queue = new BullmqQueue(settingsFor(1_000, 2));
    try {
      for (const id of ['12345', 'chat:C123:1700000000.1']) {
        const job = sampleJob({ id, idempotency_key: `key-${id}` });
        expect(await queue.enqueue(job)).toEqual({ id, deduplicated: false });
        const lease = await queue.claim({ workerId: 'w', waitMs: 2_000 });
        expect(lease?.job.id).toBe(id);
        await lease!.ack();
      }
    } finally {
      await queue.close();
    }
  });

  it('a producer fails fast with a clear error when Redis is unreachable', async () => {
    const queue = new BullmqQueue({
      ...settingsFor(1_000, 2),
      url: 'redis://:hunter2@127.0.0.1:1',
      connectTimeoutMs: 500,
    });
    try {
      const error = await queue.enqueue(sampleJob()).catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: 'queue_unavailable',
        verdict: 'transient',
        message: expect.stringContaining('not reachable'),
      });
      expect((error as Error).message).not.toContain('hunter2');
    } finally {
      await queue.close();
    }
  });

  it('a claim waiting for an unreachable Redis ends when its signal aborts (shutdown), and close does not hang', async () => {
    const queue = new BullmqQueue({ ...settingsFor(1_000, 2), url: 'redis://127.0.0.1:1' });
    const shutdown = new AbortController();
    const claiming = queue.claim({ workerId: 'w', waitMs: 60_000, signal: shutdown.signal });
    setTimeout(() => shutdown.abort(), 300);
    // Without the abort the claim would wait for Redis forever: the test's timeout says so.
    expect(await claiming).toBeUndefined();
    await queue.close();
  });

  it('ackAndClaim completes the job and claims the next in the same call, with its own token', async () => {
    const queue = new BullmqQueue(settingsFor(1_000, 2));
    try {
      const jobs = [sampleJob(), sampleJob(), sampleJob({ title: 42 } as never)];
      for (const job of jobs.slice(0, 2)) await queue.enqueue(job);
      await queue.injectRaw(JSON.stringify(jobs[2]));
      const first = await queue.claim({ workerId: 'w', waitMs: 2_000 });
      const second = await first!.ackAndClaim!();
      expect(second?.job).toEqual(jobs[1]);
      expect(second?.attempt).toBe(1);
      expect(second?.token).not.toBe(first?.token);
      expect(await queue.stats()).toMatchObject({ completed: 1, inFlight: 1, ready: 1 });
      // The old lease is settled; the new one is live (heartbeat, then settle).
      await expect(first!.ack()).rejects.toMatchObject({ code: 'lease_lost' });
      await second!.heartbeat();
      // The malformed payload fetched next is dead-lettered, not handed out.
      expect(await second!.ackAndClaim!()).toBeUndefined();
      expect(await queue.stats()).toMatchObject({ completed: 2, inFlight: 0, ready: 0, deadLetter: 1 });
    } finally {
      await queue.close();
    }
  });

  it('a job claimed by ackAndClaim and released goes back without spending an attempt', async () => {
    const queue = new BullmqQueue(settingsFor(1_000, 2));
    try {
      for (const job of [sampleJob(), sampleJob()]) await queue.enqueue(job);
      const first = await queue.claim({ workerId: 'w', waitMs: 2_000 });
      const second = await first!.ackAndClaim!();
      await second!.release();
      const again = await queue.claim({ workerId: 'w2', waitMs: 2_000 });
      expect(again?.job.id).toBe(second?.job.id);
      expect(again?.attempt).toBe(1);
      await again!.ack();
    } finally {
      await queue.close();
    }
  });

  it('refuses nonsense settings with a clear error', () => {
    expect(() => new BullmqQueue({ ...settingsFor(0, 2) })).toThrow(/leaseMs/);
    expect(() => new BullmqQueue({ ...settingsFor(1_000, 0) })).toThrow(/maxAttempts/);
    expect(() => new BullmqQueue({ ...settingsFor(1_000, 2), name: 'a:b' })).toThrow(/name/);
  });
});
