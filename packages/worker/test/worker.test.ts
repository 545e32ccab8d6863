import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { cancelOf } from '@codefleet/core';
import { Writable } from 'node:stream';
import { createLogger, silentLogger } from '@codefleet/log';
import type { JobResult } from '@codefleet/pipeline';
import type { Lease, LocalQueue, Queue } from '@codefleet/queue';
import { openQueue } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir, sampleJob, type TempDir, waitFor, withTimeoutsUntil } from '@codefleet/testkit';
import { runWorker, type JobRunner, type WorkerOptions } from '../src/index.js';
import { localQueue } from './local-queue.js';

// The job runner here is a plain function standing in for the pipeline (which has its own
// tests on real parts): these tests are about how the worker claims, heartbeats, settles
// and shuts down, against the real SQLite queue.
const fakeRun = { run_id: 'x' } as unknown as JobResult['run'];

describe('runWorker', () => {
  let dir: TempDir;
  let queue: LocalQueue;
  beforeEach(async () => {
    dir = await createTempDir('worker');
    queue = localQueue(dir.path);
  });
  afterEach(async () => {
    await queue.close();
    await dir.dispose();
  });
  const options = (shutdown: AbortSignal, extra: Partial<WorkerOptions> = {}): WorkerOptions => ({
    workerId: 'w1',
    concurrency: 1,
    heartbeatMs: 200,
    shutdownGraceMs: 5_000,
    shutdown,
    log: silentLogger(),
    claimWaitMs: 50,
    ...extra,
  });

  it('a queue closed under the worker: its empty claims are paced, so timers and shutdown still run', async () => {
    // A closed LocalQueue answers every claim at once, with nothing. Claimed again at once, the
    // loop ran on resolved promises alone: no timer fired, not even the one that stops it.
    await queue.close();
    const shutdown = new AbortController();
    let claims = 0;
    let ticked = false;
    const closed: Queue = Object.create(queue, {
      claim: {
        value: async (...args: Parameters<Queue['claim']>) => {
          claims += 1;
          // The second claim comes after a turn of the event loop, which ran the first's check.
          if (claims === 1) setImmediate(() => (ticked = true));
          if (claims === 2) shutdown.abort();
          return queue.claim(...args);
        },
      },
    }) as Queue;
    const summary = await runWorker(closed, async () => ({ action: 'ack', run: fakeRun }), options(shutdown.signal));
    expect(ticked).toBe(true);
    expect(summary).toMatchObject({ processed: 0 });
  });

  it('shutdown during a job: no new claims, the running job finishes within the grace period', async () => {
    const jobs = [sampleJob(), sampleJob()];
    for (const job of jobs) await queue.enqueue(job);
    const shutdown = new AbortController();
    const seen: string[] = [];
    const runner: JobRunner = async (ctx) => {
      seen.push(ctx.job.id);
      shutdown.abort(); // SIGTERM arrives while this job runs
      await sleep(300);
      return { action: 'ack', run: fakeRun };
    };
    const summary = await runWorker(queue, runner, options(shutdown.signal));
    expect(seen).toEqual([jobs[0]!.id]);
    expect(summary).toMatchObject({ processed: 1, acked: 1 });
    expect(await queue.stats()).toMatchObject({ completed: 1, ready: 1, inFlight: 0 });
  });

  it('a job still running after the grace period is stopped and released for another worker at once', async () => {
    const job = sampleJob();
    await queue.enqueue(job);
    const shutdown = new AbortController();
    const runner: JobRunner = async (ctx) => {
      shutdown.abort();
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      return { action: 'release', run: fakeRun };
    };
    const summary = await runWorker(queue, runner, options(shutdown.signal, { shutdownGraceMs: 200 }));
    expect(summary).toMatchObject({ processed: 1, released: 1 });
    const next = await queue.claim({ workerId: 'w2' });
    expect(next?.job.id).toBe(job.id);
    expect(next?.attempt).toBe(1);
  });

  it('a queue that does not answer (Redis unreachable) is logged while the worker waits, and shutdown still ends it', async () => {
    // The real BullMQ adapter on a port nothing listens on: its claim waits for Redis.
    const silentQueue = await openQueue({
      backend: 'bullmq',
      url: 'redis://127.0.0.1:1',
      prefix: 'cf-test',
      name: 'unreachable',
      leaseMs: 2_000,
      maxAttempts: 3,
      pollMs: 20,
    });
    const lines: string[] = [];
    const shutdown = new AbortController();
    const log = createLogger({
      level: 'warn',
      destination: new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(chunk.toString('utf8'));
          if (lines.some((l) => l.includes('queue.not_answering'))) shutdown.abort();
          done();
        },
      }),
    });
    try {
      const summary = await runWorker(
        silentQueue,
        async () => ({ action: 'ack', run: fakeRun }),
        options(shutdown.signal, { log, slowClaimMs: 200 }),
      );
      expect(summary).toMatchObject({ processed: 0 });
      expect(JSON.parse(lines.find((l) => l.includes('queue.not_answering')) ?? '{}')).toMatchObject({
        level: 'warn',
        msg: expect.stringContaining('has not answered a claim'),
      });
    } finally {
      await silentQueue.close();
    }
  });

  it('failed claims back off (1 s, 2 s, 4 s …) and each log line says for how long and when again', async () => {
    // A queue whose claims fail at once, as a refused connection does.
    const failing = Object.assign(Object.create(queue) as LocalQueue, {
      claim: async () => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
      },
    });
    const lines: Record<string, unknown>[] = [];
    const shutdown = new AbortController();
    const log = createLogger({
      level: 'error',
      destination: {
        write: (line: string) => {
          lines.push(JSON.parse(line) as Record<string, unknown>);
          if (lines.length === 3) shutdown.abort();
        },
      },
    });
    await runWorker(failing, async () => ({ action: 'ack', run: fakeRun }), options(shutdown.signal, { log }));
    expect(lines.map((l) => [l.event, l.failures, l.retry_in_ms])).toEqual([
      ['queue.claim_failed', 1, 1_000],
      ['queue.claim_failed', 2, 2_000],
      ['queue.claim_failed', 3, 4_000],
    ]);
    expect(lines[2]!.msg).toMatch(/^claim failed \(queue unreachable for \d+ s\); retrying in 4 s$/);
  });

  it('giveUpAfterMs: a queue that does not answer ends the worker with queue_unavailable', async () => {
    const silentQueue = await openQueue({
      backend: 'bullmq',
      url: 'redis://127.0.0.1:1',
      prefix: 'cf-test',
      name: 'unreachable',
      leaseMs: 2_000,
      maxAttempts: 3,
      pollMs: 20,
    });
    try {
      const never = new AbortController();
      await expect(
        runWorker(
          silentQueue,
          async () => ({ action: 'ack', run: fakeRun }),
          options(never.signal, { giveUpAfterMs: 300 }),
        ),
      ).rejects.toMatchObject({ code: 'queue_unavailable', message: expect.stringContaining('gave up') });
    } finally {
      await silentQueue.close();
    }
  });

  it('heartbeats keep a long job leased beyond the lease duration', async () => {
    // A thief's claim must come back empty if it returned before the lease the worker last
    // renewed could have run out. A loaded machine can stall the worker past a short lease
    // (it is then not alive in the lease's sense); that run is repeated with a longer lease.
    const { result } = await withTimeoutsUntil(
      [2_000, 20_000, 60_000],
      async (leaseMs) => {
        const q = leaseMs === 2_000 ? queue : localQueue(dir.path, leaseMs);
        await q.enqueue(sampleJob());
        let renewedFrom = Date.now();
        // The worker's queue, telling when each of its heartbeats started.
        const claim = async (...args: Parameters<Queue['claim']>) => {
          const lease = await q.claim(...args);
          if (lease === undefined) return lease;
          const heartbeat = async () => {
            const from = Date.now();
            await lease.heartbeat();
            renewedFrom = from;
          };
          return Object.create(lease, { heartbeat: { value: heartbeat } }) as Lease;
        };
        const watched = new Proxy(q, {
          get: (target, key) => {
            if (key === 'claim') return claim;
            const value: unknown = Reflect.get(target, key, target);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
        const shutdown = new AbortController();
        const seen: { theft: 'none' | 'stolen' | 'stalled' } = { theft: 'none' };
        const runner: JobRunner = async () => {
          const until = Date.now() + leaseMs * 1.5;
          while (Date.now() < until && seen.theft === 'none') {
            if (await q.claim({ workerId: 'thief' }))
              seen.theft = Date.now() < renewedFrom + leaseMs ? 'stolen' : 'stalled';
            await sleep(200);
          }
          shutdown.abort();
          return { action: 'ack', run: fakeRun };
        };
        await runWorker(watched, runner, options(shutdown.signal));
        const { completed } = await q.stats();
        if (q !== queue) await q.close();
        return { theft: seen.theft, completed };
      },
      (run) => run.theft !== 'stalled',
    );
    expect(result.theft).toBe('none');
    expect(result.completed).toBe(1);
  });

  it('a lost lease aborts the running job', async () => {
    await queue.enqueue(sampleJob());
    // The first heartbeat must come after the 2 s lease expired and a thief took the job. A
    // loaded machine can hold the thief past a short heartbeat interval, whose heartbeat then
    // renews the lease first; such a run gives the job back and is repeated with a longer one.
    const { result } = await withTimeoutsUntil(
      [2_500, 10_000, 40_000],
      async (heartbeatMs) => {
        const shutdown = new AbortController();
        const seen = { stolen: false, abortedAfterTheft: false };
        const runner: JobRunner = async (ctx) => {
          const thief = await queue.claim({ workerId: 'thief', waitMs: heartbeatMs });
          if (thief) {
            seen.stolen = true;
            await waitFor(() => ctx.signal.aborted, { what: 'the job to be aborted' });
            seen.abortedAfterTheft = true;
            await thief.ack();
          }
          // Only now: a shutdown stops a job still running after its grace period, too.
          shutdown.abort();
          return { action: 'release', run: fakeRun };
        };
        const summary = await runWorker(queue, runner, options(shutdown.signal, { heartbeatMs }));
        return { ...seen, summary };
      },
      (run) => run.stolen,
    );
    const { abortedAfterTheft, summary } = result;
    expect(abortedAfterTheft).toBe(true);
    // Settling the stolen lease fails quietly: the thief's result stands.
    expect(summary.processed).toBe(1);
    expect(await queue.stats()).toMatchObject({ completed: 1, inFlight: 0 });
  });

  it('a runner that throws never crashes the worker: the job is retried later', async () => {
    const job = sampleJob();
    await queue.enqueue(job);
    const shutdown = new AbortController();
    const summary = await runWorker(
      queue,
      async () => {
        shutdown.abort();
        throw new Error('boom');
      },
      options(shutdown.signal),
    );
    expect(summary).toMatchObject({ processed: 1, retried: 1 });
    expect(await queue.stats()).toMatchObject({ delayed: 1 });
  });

  it('task leases: one running job per task key; the token reaches the runner; released after settling', async () => {
    const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
    try {
      const busy = sampleJob({ idempotency_key: 'acme/widgets#issue-1' });
      const free = sampleJob({ idempotency_key: 'acme/widgets#issue-2' });
      // Another worker elsewhere holds issue 1.
      expect(await store.acquire(busy.idempotency_key, 'elsewhere', 3_600_000)).toBe(true);
      await queue.enqueue(busy);
      await queue.enqueue(free);
      const shutdown = new AbortController();
      const ran: { id: string; token?: string; owned: boolean }[] = [];
      const runner: JobRunner = async (ctx) => {
        ran.push({
          id: ctx.job.id,
          ...(ctx.leaseToken === undefined ? {} : { token: ctx.leaseToken }),
          owned: await store.fence(ctx.job.idempotency_key, ctx.leaseToken ?? '', 'push', ctx.job.id),
        });
        shutdown.abort(); // enqueued second, so the busy task was seen first
        return { action: 'ack', run: fakeRun };
      };
      const summary = await runWorker(queue, runner, options(shutdown.signal, { leases: { store, ttlMs: 60_000 } }));
      expect(ran.map((r) => [r.id, r.owned])).toEqual([[free.id, true]]);
      expect(summary).toMatchObject({ acked: 1, retried: 1 });
      // The busy task went back to the queue for later, its attempt spent but not lost.
      expect(await queue.stats()).toMatchObject({ completed: 1, delayed: 1 });
      // Released after settling: anyone may take issue 2 now.
      expect(await store.acquire(free.idempotency_key, 'next', 60_000)).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('a cancel requested for the task stops the running job at the next heartbeat', async () => {
    const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
    try {
      const job = sampleJob({ idempotency_key: 'acme/widgets#issue-3' });
      await queue.enqueue(job);
      const shutdown = new AbortController();
      let reason: unknown;
      const runner: JobRunner = async (ctx) => {
        await store.requestCancel(ctx.job.idempotency_key, 'alice');
        await waitFor(() => ctx.signal.aborted, { what: 'the job to be stopped' });
        reason = ctx.signal.reason;
        shutdown.abort();
        return { action: 'ack', run: fakeRun };
      };
      await runWorker(queue, runner, options(shutdown.signal, { leases: { store, ttlMs: 60_000 } }));
      expect(cancelOf(reason)).toBe('alice');
    } finally {
      await store.close();
    }
  });
});
