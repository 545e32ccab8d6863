/**
 * The queue conformance suite. Every adapter runs the same tests against a real engine:
 *
 *   queueConformance({ name: 'local', leaseMs: 600, open: async (o) => ({ ... }) });
 *
 * Imported by the adapters' jest test files in this folder's parent; it is test code, so it
 * lives outside src/ and never reaches dist/.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import { sampleJob, startFixture, waitFor, withTimeoutsUntil, type FixtureProcess } from '@codefleet/testkit';
import type { Queue } from '../../src/port.js';
import type { QueueSettings } from '../../src/settings.js';
import type { ConcurrencyLimits } from '../../src/concurrency.js';
import { schedulingConformance } from './scheduling.js';
import { retentionConformance } from './retention.js';

/** A fresh, empty queue opened for one test. */
interface OpenedQueue {
  queue: Queue;
  /** Settings another process can open the same queue with. */
  settings: QueueSettings;
  /** Writes an unvalidated payload straight into the engine, as a foreign producer could. */
  injectRaw(payload: string): Promise<void>;
  dispose(): Promise<void>;
}

/** How the suite reaches one adapter. */
export interface ConformanceHarness {
  name: string;
  /** The shortest lease the engine handles reliably (SQS counts whole seconds). */
  leaseMs: number;
  /**
   * `priority`: low, normal and high are each served in order (every adapter serves high
   * before normal). `trim`: the adapter keeps finished jobs and trims them (`Queue.trim`).
   */
  capabilities?: { priority?: boolean; trim?: boolean };
  /** `limits` and `agingMs` go into the settings as they are (absent: none, the default). */
  open(options: {
    leaseMs: number;
    maxAttempts: number;
    limits?: ConcurrencyLimits;
    agingMs?: number;
  }): Promise<OpenedQueue>;
}

const claimerScript = fileURLToPath(new URL('../fixtures/claimer.mjs', import.meta.url));

/**
 * How long a claim waits for a job that must come (a redelivery, the end of a retry delay):
 * it returns as soon as the job is there, so only a hang waits this long.
 */
const mustComeMs = 120_000;

/**
 * The lease of every test that is not about expiry: far longer than any stall of a loaded
 * machine. On BullMQ and SQS a lease that ran out is handed back to the queue at once (the
 * stalled checker, the visibility timeout), so a held job showed as ready and its holder's
 * ack failed with lease_lost after a one-second stall between claim and settle. The tests of
 * expiry pass the harness's short lease themselves.
 */
const heldMs = 3_600_000;

/** Registers the conformance tests for one adapter. */
export function queueConformance(harness: ConformanceHarness): void {
  const leaseMs = harness.leaseMs;
  const cleanups: (() => Promise<void> | void)[] = [];
  const open = async (
    options: { maxAttempts?: number; leaseMs?: number; limits?: ConcurrencyLimits; agingMs?: number } = {},
  ) => {
    const opened = await harness.open({
      ...options,
      leaseMs: options.leaseMs ?? heldMs,
      maxAttempts: options.maxAttempts ?? 4,
    });
    cleanups.push(() => opened.dispose());
    return opened;
  };
  const spawnClaimer = (
    settings: QueueSettings,
    workerId: string,
    mode: 'drain' | 'hold',
    firstWaitMs?: number,
    goFile?: string,
  ) => {
    const idleMs = Math.max(1_500, leaseMs * 2);
    const proc = startFixture(claimerScript, [
      JSON.stringify({
        settings,
        workerId,
        mode,
        idleMs,
        ...(firstWaitMs === undefined ? {} : { firstWaitMs }),
        ...(goFile === undefined ? {} : { goFile }),
      }),
    ]);
    cleanups.push(() => proc.kill('SIGKILL'));
    return proc;
  };

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  describe(`queue conformance: ${harness.name}`, () => {
    schedulingConformance(open, leaseMs);
    if (harness.capabilities?.trim) retentionConformance(open);

    it('enqueue → claim → ack delivers the job once', async () => {
      const { queue } = await open();
      const job = sampleJob({ title: 'add a widget' });
      expect(await queue.enqueue(job)).toEqual({ id: job.id, deduplicated: false });
      const lease = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
      expect(lease?.job).toEqual(job);
      expect(lease?.attempt).toBe(1);
      expect((await queue.stats()).inFlight).toBe(1);
      await lease!.ack();
      expect(await queue.claim({ workerId: 'w1', waitMs: leaseMs * 2 })).toBeUndefined();
      expect(await queue.stats()).toMatchObject({ ready: 0, inFlight: 0, completed: 1, depth: 0 });
    });

    it('rejects a malformed job at enqueue, naming the field', async () => {
      const { queue } = await open();
      await expect(queue.enqueue({ ...sampleJob(), title: 42 } as never)).rejects.toMatchObject({
        code: 'invalid_job',
        message: expect.stringContaining('title'),
      });
      expect((await queue.stats()).depth).toBe(0);
    });

    it('dedups by idempotency key while pending or running, not after completion', async () => {
      const { queue } = await open();
      const first = sampleJob({ idempotency_key: 'acme/widgets#issue-7' });
      const again = sampleJob({ idempotency_key: 'acme/widgets#issue-7' });
      expect(await queue.enqueue(first)).toEqual({ id: first.id, deduplicated: false });
      expect(await queue.enqueue(again)).toEqual({ id: first.id, deduplicated: true });
      const lease = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
      expect(lease?.job.id).toBe(first.id);
      expect(await queue.enqueue(again)).toEqual({ id: first.id, deduplicated: true });
      await lease!.ack();
      expect(await queue.enqueue(again)).toEqual({ id: again.id, deduplicated: false });
      expect((await queue.stats()).depth).toBe(1);
    });

    it('redelivers after the lease expires; the old lease can no longer settle', async () => {
      // Nothing is redelivered while the lease runs: shown by a claim that returned before the
      // lease could have expired. A loaded machine can stall past a short lease before it
      // returns; such a run proves nothing and is repeated with a longer lease.
      const { result: run } = await withTimeoutsUntil(
        [leaseMs, leaseMs * 10, leaseMs * 50],
        async (leaseMs) => {
          const { queue } = await open({ leaseMs });
          const job = sampleJob();
          await queue.enqueue(job);
          const claimedFrom = Date.now();
          const first = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
          const early = await queue.claim({ workerId: 'w2' });
          return { queue, job, first, early, withinLease: Date.now() < claimedFrom + leaseMs };
        },
        (run) => run.withinLease,
      );
      const { queue, job, first } = run;
      expect(first?.attempt).toBe(1);
      expect(run.early).toBeUndefined();
      const second = await queue.claim({ workerId: 'w2', waitMs: mustComeMs });
      expect(second?.job.id).toBe(job.id);
      expect(second?.attempt).toBe(2);
      expect(second?.token).not.toBe(first?.token);
      await expect(first!.ack()).rejects.toMatchObject({ code: 'lease_lost' });
      await expect(first!.heartbeat()).rejects.toMatchObject({ code: 'lease_lost' });
      await second!.ack();
      expect((await queue.stats()).completed).toBe(1);
    });

    it('heartbeats keep the lease: no redelivery while the holder is alive', async () => {
      // Each claim by another worker must come back empty if it returned before the lease the
      // last heartbeat renewed could have run out. A loaded machine can stall the holder past a
      // short lease (it is then not alive in the lease's sense); that run is repeated with a
      // longer lease.
      const { result: run } = await withTimeoutsUntil(
        [leaseMs, leaseMs * 10, leaseMs * 50],
        async (leaseMs) => {
          const { queue } = await open({ leaseMs });
          await queue.enqueue(sampleJob());
          const lease = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
          const before = lease!.expiresAt;
          const stolen: unknown[] = [];
          const until = Date.now() + leaseMs * 3;
          while (Date.now() < until) {
            const renewedFrom = Date.now();
            await lease!.heartbeat();
            stolen.push(await queue.claim({ workerId: 'w2', waitMs: Math.floor(leaseMs / 3) }));
            if (Date.now() >= renewedFrom + leaseMs) return { lease, before, stolen, held: false };
          }
          return { lease, before, stolen, held: true };
        },
        (run) => run.held,
      );
      expect(run.stolen.filter((claim) => claim !== undefined)).toEqual([]);
      expect(run.lease!.expiresAt).toBeGreaterThan(run.before);
      await run.lease!.ack();
    });

    it('transient retry redelivers after the delay, with the next attempt number', async () => {
      // Held back for the delay: shown by a stats call and a claim that returned before the
      // delay could have ended; a run a loaded machine stalled past it is repeated with a
      // longer delay.
      const { result: run } = await withTimeoutsUntil(
        [leaseMs * 2, leaseMs * 20, leaseMs * 100],
        async (delayMs) => {
          const { queue } = await open();
          const job = sampleJob();
          await queue.enqueue(job);
          const lease = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
          const retriedFrom = Date.now();
          const verdict = await lease!.retry({ delayMs, reason: 'agent timed out' });
          const stats = await queue.stats();
          const early = await queue.claim({ workerId: 'w1' });
          return { queue, job, verdict, stats, early, withinDelay: Date.now() < retriedFrom + delayMs };
        },
        (run) => run.withinDelay,
      );
      const { queue, job } = run;
      expect(run.verdict).toBe('retrying');
      expect(run.stats).toMatchObject({ delayed: 1, ready: 0, inFlight: 0 });
      expect(run.early).toBeUndefined();
      const again = await queue.claim({ workerId: 'w1', waitMs: mustComeMs });
      expect(again?.job.id).toBe(job.id);
      expect(again?.attempt).toBe(2);
      await again!.ack();
    });

    it('permanent failure dead-letters with the reason; list and redrive', async () => {
      const { queue } = await open();
      const job = sampleJob();
      await queue.enqueue(job);
      // Dead-lettered on its 2nd delivery: the redrive still starts again at attempt 1,
      // which is how the pipeline tells a redrive from a redelivery of a failed run.
      expect(
        await (await queue.claim({ workerId: 'w1', waitMs: 5_000 }))!.retry({ delayMs: 0, reason: 'transient' }),
      ).toBe('retrying');
      const lease = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
      expect(lease?.attempt).toBe(2);
      await lease!.deadLetter('fix attempts exhausted: test failed');
      expect(await queue.claim({ workerId: 'w1', waitMs: leaseMs })).toBeUndefined();
      const dead = await queue.deadLetters();
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({ id: job.id, reason: 'fix attempts exhausted: test failed', attempts: 2, job });
      expect((await queue.stats()).deadLetter).toBe(1);

      expect(await queue.redrive('no-such-job')).toEqual({ status: 'not_found' });
      expect(await queue.redrive(job.id)).toEqual({ status: 'redriven', id: job.id });
      expect(await queue.deadLetters()).toEqual([]);
      const again = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
      expect(again?.job.id).toBe(job.id);
      expect(again?.attempt).toBe(1);
      await again!.ack();
    });

    it('drops a dead letter for good, and only a dead letter', async () => {
      const { queue } = await open();
      const dead = sampleJob();
      await queue.enqueue(dead);
      await (await queue.claim({ workerId: 'w1', waitMs: 5_000 }))!.deadLetter('permanent: the repository is gone');
      const live = sampleJob();
      await queue.enqueue(live);
      expect(await queue.drop(live.id)).toEqual({ status: 'not_found' });
      expect(await queue.drop('no-such-job')).toEqual({ status: 'not_found' });
      expect(await queue.drop(dead.id)).toEqual({ status: 'dropped', id: dead.id });
      expect(await queue.deadLetters()).toEqual([]);
      expect((await queue.stats()).deadLetter).toBe(0);
      // Dropping twice is safe; a dropped job cannot be redriven.
      expect(await queue.drop(dead.id)).toEqual({ status: 'not_found' });
      expect(await queue.redrive(dead.id)).toEqual({ status: 'not_found' });
      const next = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
      expect(next?.job.id).toBe(live.id);
      await next!.ack();
      // Its task can be asked for again.
      expect(await queue.enqueue(sampleJob({ idempotency_key: dead.idempotency_key }))).toMatchObject({
        deduplicated: false,
      });
    });

    it('will not redrive while another job with the same key is active', async () => {
      const { queue } = await open();
      const job = sampleJob({ idempotency_key: 'same-key' });
      await queue.enqueue(job);
      await (await queue.claim({ workerId: 'w1', waitMs: 5_000 }))!.deadLetter('broken');
      const newer = sampleJob({ idempotency_key: 'same-key' });
      await queue.enqueue(newer);
      expect(await queue.redrive(job.id)).toEqual({ status: 'duplicate_active', activeId: newer.id });
    });

    it('dead-letters malformed payloads with the reason and keeps serving valid jobs', async () => {
      const { queue, injectRaw } = await open();
      await injectRaw('this is not json {');
      await injectRaw(JSON.stringify({ ...sampleJob(), title: 42, source: { kind: 'pager' } }));
      const good = sampleJob();
      await queue.enqueue(good);
      const lease = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
      expect(lease?.job.id).toBe(good.id);
      await lease!.ack();
      await waitFor(async () => (await queue.deadLetters()).length === 2 || undefined);
      const reasons = (await queue.deadLetters()).map((d) => d.reason).sort();
      expect(reasons).toEqual(
        [expect.stringMatching(/malformed job: .*JSON/i), expect.stringMatching(/malformed job: .*title.*42/)].sort(
          (a, b) => String(a).localeCompare(String(b)),
        ),
      );
      expect((await queue.deadLetters()).every((d) => d.raw.length > 0)).toBe(true);
    });

    it('dead-letters when attempts are exhausted by retries or by expired leases', async () => {
      const theDeadLetter = (queue: Queue, what: string) =>
        waitFor(
          async () => {
            const [dead, ...more] = await queue.deadLetters();
            return more.length === 0 ? dead : undefined;
          },
          { what },
        );
      // Retries on a queue whose leases outlast any stall, so only the retries spend attempts.
      const { queue: retrying } = await open({ maxAttempts: 2 });
      const retried = sampleJob();
      await retrying.enqueue(retried);
      const a1 = await retrying.claim({ workerId: 'w1', waitMs: 5_000 });
      expect(await a1!.retry({ delayMs: 0, reason: 'network' })).toBe('retrying');
      const a2 = await retrying.claim({ workerId: 'w1', waitMs: 5_000 });
      expect(a2?.attempt).toBe(2);
      expect(await a2!.retry({ delayMs: 0, reason: 'network again' })).toBe('dead_lettered');
      expect(await theDeadLetter(retrying, 'the retried job dead-lettered')).toMatchObject({
        id: retried.id,
        reason: expect.stringMatching(/attempts exhausted.*network again/),
      });

      const { queue } = await open({ maxAttempts: 2, leaseMs });
      const abandoned = sampleJob();
      await queue.enqueue(abandoned);
      expect((await queue.claim({ workerId: 'w1', waitMs: 5_000 }))?.attempt).toBe(1);
      expect((await queue.claim({ workerId: 'w1', waitMs: mustComeMs }))?.attempt).toBe(2);
      // The second lease expires too; the next claim must bury the job, not deliver it.
      expect(await queue.claim({ workerId: 'w1', waitMs: leaseMs * 3 })).toBeUndefined();
      expect(await theDeadLetter(queue, 'the abandoned job dead-lettered')).toMatchObject({
        id: abandoned.id,
        reason: expect.stringMatching(/lease expired|attempts exhausted/),
      });
    });

    it('release gives the job back at once without spending an attempt', async () => {
      const { queue } = await open();
      await queue.enqueue(sampleJob());
      const lease = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
      await lease!.release();
      const again = await queue.claim({ workerId: 'w2', waitMs: 5_000 });
      expect(again?.attempt).toBe(1);
      await again!.ack();
    });

    it('a waiting claim returns undefined when its signal aborts', async () => {
      const { queue } = await open();
      const controller = new AbortController();
      const pending = queue.claim({ workerId: 'w1', waitMs: 30_000, signal: controller.signal });
      setTimeout(() => controller.abort(), 100);
      expect(await pending).toBeUndefined();
    });

    it('claims a high-priority job before a normal one enqueued earlier', async () => {
      const { queue } = await open();
      const normal = sampleJob({ priority: 'normal' });
      const high = sampleJob({ priority: 'high' });
      for (const job of [normal, high]) await queue.enqueue(job);
      const first = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
      await first!.ack();
      const second = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
      await second!.ack();
      expect([first!.job.id, second!.job.id]).toEqual([high.id, normal.id]);
      expect(await queue.stats()).toMatchObject({ depth: 0, completed: 2 });
    });

    if (harness.capabilities?.priority) {
      it('serves high priority before normal before low', async () => {
        const { queue } = await open();
        const low = sampleJob({ priority: 'low' });
        const normal = sampleJob({ priority: 'normal' });
        const high = sampleJob({ priority: 'high' });
        for (const job of [low, normal, high]) await queue.enqueue(job);
        const order: string[] = [];
        for (let i = 0; i < 3; i += 1) {
          const lease = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
          order.push(lease!.job.id);
          await lease!.ack();
        }
        expect(order).toEqual([high.id, normal.id, low.id]);
      });
    }

    it('stats count ready, delayed, in flight, dead and completed', async () => {
      const { queue } = await open();
      for (let i = 0; i < 4; i += 1) await queue.enqueue(sampleJob());
      const done = await queue.claim({ workerId: 'w', waitMs: 5_000 });
      await done!.ack();
      const dead = await queue.claim({ workerId: 'w', waitMs: 5_000 });
      await dead!.deadLetter('bad');
      const later = await queue.claim({ workerId: 'w', waitMs: 5_000 });
      await later!.retry({ delayMs: 60_000, reason: 'later' });
      const held = await queue.claim({ workerId: 'w', waitMs: 5_000 });
      expect(held).toBeDefined();
      expect(await queue.stats()).toEqual({
        ready: 0,
        delayed: 1,
        inFlight: 1,
        deadLetter: 1,
        completed: 1,
        depth: 1,
        oldestQueuedAt: expect.any(Number),
      });
    });

    it('stats: oldestQueuedAt is when the longest-waiting ready or delayed job was enqueued', async () => {
      const { queue } = await open();
      expect((await queue.stats()).oldestQueuedAt).toBeUndefined();
      // When each job was enqueued, as bounds read on this host's clock around the call.
      const enqueued = new Map<string, [number, number]>();
      for (const job of [sampleJob(), sampleJob()]) {
        const before = Date.now();
        await queue.enqueue(job);
        enqueued.set(job.id, [before, Date.now()]);
      }
      const within = (at: number | undefined, id: string) => {
        const [from, to] = enqueued.get(id) ?? [0, 0];
        expect(at).toBeGreaterThanOrEqual(from);
        expect(at).toBeLessThanOrEqual(to);
      };
      const [firstId, secondId] = [...enqueued.keys()] as [string, string];
      const oldest = (await queue.stats()).oldestQueuedAt;
      within(oldest, firstId);
      // A claimed job no longer waits: the other one is the oldest now.
      const claimed = await queue.claim({ workerId: 'w', waitMs: 5_000 });
      const claimedId = claimed!.job.id;
      within((await queue.stats()).oldestQueuedAt, claimedId === firstId ? secondId : firstId);
      // In backoff it waits again, counted from its enqueue.
      await claimed!.retry({ delayMs: 60_000, reason: 'later' });
      expect((await queue.stats()).oldestQueuedAt).toBe(oldest);
      const other = await queue.claim({ workerId: 'w', waitMs: 5_000 });
      await other!.ack();
      within((await queue.stats()).oldestQueuedAt, claimedId);
    });

    it('4 claimer processes × 200 jobs: every job completed exactly once', async () => {
      // The long lease matters here too: this test is about claims never overlapping, and with
      // a short one a claimer paused by a loaded machine lost its job to another and failed its
      // own ack (a redelivery, which other tests cover).
      const { queue, settings } = await open();
      // Each claimer holds its first job until all four hold one: every process provably
      // works at the same time, however the machine schedules them.
      const dir = await mkdtemp(join(tmpdir(), 'claimers-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const go = join(dir, 'go');
      const procs = [1, 2, 3, 4].map((n) => spawnClaimer(settings, `proc-${n}`, 'drain', 60_000, go));
      await Promise.all(procs.map((p) => p.waitForLine('ready')));
      const ids = new Set<string>();
      for (let i = 0; i < 200; i += 1) {
        const job = sampleJob();
        ids.add(job.id);
        await queue.enqueue(job);
      }
      await Promise.all(procs.map((p) => p.waitForLine(/^claimed /)));
      await writeFile(go, '');
      const exits = await Promise.all(procs.map((p) => p.exited));
      expect(exits.map((e) => e.exitCode)).toEqual([0, 0, 0, 0]);
      const acked = procs.flatMap((p) => p.lines.filter((l) => l.startsWith('acked ')).map((l) => l.slice(6)));
      expect(acked).toHaveLength(200);
      expect(new Set(acked)).toEqual(ids);
      // More than one process did work (otherwise the test proves nothing about concurrency).
      expect(procs.filter((p) => p.lines.some((l) => l.startsWith('acked '))).length).toBeGreaterThan(1);
      expect(await queue.stats()).toMatchObject({ depth: 0, inFlight: 0, completed: 200, deadLetter: 0 });
    });

    it('a claimer SIGKILLed mid-lease: the job is redelivered after expiry and completed exactly once', async () => {
      const { queue, settings } = await open({ leaseMs });
      const job = sampleJob();
      await queue.enqueue(job);
      const holder: FixtureProcess = spawnClaimer(settings, 'doomed', 'hold');
      expect(await holder.waitForLine(/^claimed /)).toBe(`claimed ${job.id} 1`);
      holder.kill('SIGKILL');
      expect((await holder.exited).signal).toBe('SIGKILL');
      // The rescuer's own lease is long (BullMQ still looks for stalled jobs at the suite's
      // pace): on a loaded machine a claim-to-ack gap past the suite's 1 s lease lost it
      // the job it had just been given, and its ack failed. It waits as long as a
      // redelivery may take to come.
      const longLease: QueueSettings =
        settings.backend === 'bullmq'
          ? { ...settings, leaseMs: 60_000, stalledCheckMs: Math.max(100, Math.floor(leaseMs / 2)) }
          : { ...settings, leaseMs: 60_000 };
      const rescuer = spawnClaimer(longLease, 'rescuer', 'drain', mustComeMs);
      expect((await rescuer.exited).exitCode).toBe(0);
      expect(rescuer.lines.filter((l) => l.startsWith('claimed '))).toEqual([`claimed ${job.id} 2`]);
      expect(rescuer.lines.filter((l) => l.startsWith('acked '))).toEqual([`acked ${job.id}`]);
      expect(await queue.stats()).toMatchObject({ depth: 0, inFlight: 0, completed: 1, deadLetter: 0 });
    });
  });
}
