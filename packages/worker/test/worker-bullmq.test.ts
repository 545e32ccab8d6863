import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { silentLogger } from '@codefleet/log';
import type { JobResult } from '@codefleet/pipeline';
import { openQueue, type Lease, type Queue } from '@codefleet/queue';
import { RedisRunStore } from '@codefleet/store';
import { type RedisServer, sampleJob, startRedis } from '@codefleet/testkit';
import { runWorker, type WorkerOptions } from '../src/index.js';

// On BullMQ an ack claims the slot's next job in the same round trip (fetch-next, unless
// `fetchNext: false`), and the task lease passes from one job to the next in one store call:
// these tests check that the guarantees hold on that path, against a real redis-server.
const fakeRun = { run_id: 'x' } as unknown as JobResult['run'];

describe('runWorker on BullMQ (fetch-next)', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  const open = async () => {
    const prefix = `w-${randomUUID()}`;
    const queue = await openQueue({
      backend: 'bullmq',
      url: redis.url,
      prefix,
      name: 'q',
      leaseMs: 2_000,
      maxAttempts: 3,
      pollMs: 20,
    });
    const store = new RedisRunStore({ url: redis.url, prefix });
    return {
      queue,
      store,
      close: async () => {
        await queue.close();
        await store.close();
      },
    };
  };
  const options = (shutdown: AbortSignal, extra: Partial<WorkerOptions>): WorkerOptions => ({
    workerId: 'w1',
    concurrency: 3,
    heartbeatMs: 200,
    shutdownGraceMs: 5_000,
    shutdown,
    log: silentLogger(),
    claimWaitMs: 50,
    ...extra,
  });

  it('every job runs once, holding its task lease (the fence passes), and every task lease is released', async () => {
    const { queue, store, close } = await open();
    try {
      const jobs = Array.from({ length: 30 }, () => sampleJob());
      for (const job of jobs) await queue.enqueue(job);
      const ran: string[] = [];
      // Count the claims: on the fetch-next path most jobs arrive with an ack, not a claim.
      let claims = 0;
      const counted: Queue = Object.create(queue, {
        claim: {
          value: (...args: Parameters<Queue['claim']>) => {
            claims += 1;
            return queue.claim(...args);
          },
        },
      }) as Queue;
      const summary = await runWorker(
        counted,
        async (ctx) => {
          ran.push(ctx.job.id);
          expect(await store.fence(ctx.job.idempotency_key, ctx.leaseToken!, 'push', ctx.job.id)).toBe(true);
          return { action: 'ack', run: fakeRun };
        },
        options(new AbortController().signal, { once: true, leases: { store, ttlMs: 60_000 } }),
      );
      expect(summary).toMatchObject({ processed: 30, acked: 30, retried: 0 });
      expect(claims).toBeLessThan(20);
      expect([...ran].sort()).toEqual(jobs.map((j) => j.id).sort());
      expect(await queue.stats()).toMatchObject({ completed: 30, inFlight: 0, depth: 0 });
      for (const job of jobs) expect(await store.acquire(job.idempotency_key, 'someone-else', 1_000)).toBe(true);
    } finally {
      await close();
    }
  });

  it('fetchNext false: every job is claimed with claim, none arrives with an ack', async () => {
    const { queue, store, close } = await open();
    try {
      const jobs = Array.from({ length: 10 }, () => sampleJob());
      for (const job of jobs) await queue.enqueue(job);
      let claimed = 0;
      const counted: Queue = Object.create(queue, {
        claim: {
          value: async (...args: Parameters<Queue['claim']>) => {
            const lease = await queue.claim(...args);
            if (lease) claimed += 1;
            return lease;
          },
        },
      }) as Queue;
      const summary = await runWorker(
        counted,
        async () => ({ action: 'ack', run: fakeRun }),
        options(new AbortController().signal, { once: true, fetchNext: false, leases: { store, ttlMs: 60_000 } }),
      );
      expect(summary).toMatchObject({ processed: 10, acked: 10 });
      expect(claimed).toBe(10);
      expect(await queue.stats()).toMatchObject({ completed: 10, inFlight: 0, depth: 0 });
      for (const job of jobs) expect(await store.acquire(job.idempotency_key, 'someone-else', 1_000)).toBe(true);
    } finally {
      await close();
    }
  });

  it('shutdown right after an ack claimed the next job: that job and its task go back untouched', async () => {
    const { queue, store, close } = await open();
    try {
      const [first, second] = [sampleJob(), sampleJob()];
      await queue.enqueue(first!);
      await queue.enqueue(second!);
      const shutdown = new AbortController();
      let fetched: Lease | undefined;
      // SIGTERM lands while the ack that fetched the next job is on its way back.
      const stopAfterAck: Queue = Object.create(queue, {
        claim: {
          value: async (o: Parameters<Queue['claim']>[0]) => {
            const lease = await queue.claim(o);
            if (!lease?.ackAndClaim) return lease;
            const ackAndClaim = lease.ackAndClaim.bind(lease);
            return Object.assign(Object.create(lease) as Lease, {
              ackAndClaim: async () => {
                fetched = await ackAndClaim();
                shutdown.abort();
                return fetched;
              },
            });
          },
        },
      }) as Queue;
      const ran: string[] = [];
      const summary = await runWorker(
        stopAfterAck,
        async (ctx) => {
          ran.push(ctx.job.id);
          return { action: 'ack', run: fakeRun };
        },
        options(shutdown.signal, { concurrency: 1, leases: { store, ttlMs: 60_000 } }),
      );
      expect(fetched?.job.id).toBe(second!.id);
      expect(ran).toEqual([first!.id]);
      expect(summary).toMatchObject({ processed: 1, acked: 1 });
      expect(await queue.stats()).toMatchObject({ completed: 1, inFlight: 0, ready: 1 });
      expect(await store.acquire(second!.idempotency_key, 'next-worker', 1_000)).toBe(true);
      const again = await queue.claim({ workerId: 'w2', waitMs: 1_000 });
      expect(again?.job.id).toBe(second!.id);
      expect(again?.attempt).toBe(1);
      await again!.ack();
    } finally {
      await close();
    }
  });
});
