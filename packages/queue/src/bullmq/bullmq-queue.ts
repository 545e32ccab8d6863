import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { BullJob, BullQueue, BullWorker, type JobJson } from './bull-classes.js';
import { Redis } from 'ioredis';
import { CodefleetError, parseJob, redactUrlCredentials, type Job } from '@codefleet/core';
import type {
  ClaimOptions,
  DeadLetter,
  CancelPendingResult,
  DropResult,
  EnqueueResult,
  Lease,
  PendingJob,
  Queue,
  QueueStats,
  QueueTrim,
  QueueTrimOptions,
  RedriveResult,
} from '../port.js';
import type { BullmqQueueSettings } from '../settings.js';
import { RedisAccessWatch } from '../redis-access.js';
import { dropDeadLetter, listDeadLetters, redriveDeadLetter, type DeadLetterSide } from './dead-letters.js';
import { bullJobId, priorityOf } from './ids.js';
import { jobIdOf, keepCompletedSeconds, readJob } from './jobs.js';
import { bullmqLease, type LeaseSide } from './lease.js';
import { bullmqStats } from './stats.js';
import { defaultAgingMs, holdRecheckMs, slotGroups } from '../concurrency.js';
import { RedisSlots } from '../redis-slots.js';
import { ageWaiting, cancelWaiting, holdJob, pendingJobs, unhold, wakeHeld } from './scheduling.js';
import { untilAborted } from './until-aborted.js';

// 1 for the first caller, 0 after; -1 when the job's hash is gone (never create it: BullMQ
// would take a bare hash for an existing job and refuse to add that id again).
const markAdded = `if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
return redis.call('HSETNX', KEYS[1], 'cfAdded', '1')`;

/**
 * The queue port on BullMQ (Redis), for fleets. Jobs are fetched manually
 * (`Worker.getNextJob` with a token per claim), so the worker runtime, not BullMQ's
 * processor loop, owns concurrency, heartbeats and shutdown.
 *
 * How the port maps onto BullMQ:
 * - lease = BullMQ's job lock (token, `lockDuration` = `leaseMs`); heartbeat =
 *   `extendLock`; an expired lock is found by the stalled checker, which every claiming
 *   process runs, and the job goes back to wait: redelivery.
 * - `ackAndClaim` = `moveToCompleted` with fetch-next: the completion script also moves
 *   the next job to active under the same lock token, as BullMQ's own worker loop does.
 * - attempts = `attemptsStarted`; BullMQ's own retries are off (`attempts: 1`), the
 *   pipeline's outer policy decides, and a delayed retry is `moveToDelayed`.
 * - dead letter = the failed set, with the reason as `failedReason`.
 * - idempotency key = BullMQ deduplication id: kept while the job waits, is delayed or
 *   runs; removed when it completes or fails, and recovered when the job was removed.
 *
 * Connections follow BullMQ's advice for long jobs: the claiming side never gives up on
 * a command (`maxRetriesPerRequest: null`) and reconnects; the producing side fails fast
 * (`enableOfflineQueue: false`) so a producer learns at once that Redis is down.
 */
export class BullmqQueue implements Queue {
  readonly backend = 'bullmq' as const;
  readonly #settings: BullmqQueueSettings;
  readonly #producer: Redis;
  readonly #queue: BullQueue;
  #worker: BullWorker | undefined;
  #workerConnection: Redis | undefined;
  #ready: Promise<void> | undefined;
  #slots: RedisSlots | undefined;
  /** When this process last ran an aging pass (at most one a second). */
  #agedAt = 0;
  #closed = false;
  /** A wrong or missing password fails calls at once, naming queue.bullmq.url. */
  readonly #access: RedisAccessWatch;

  constructor(settings: BullmqQueueSettings) {
    if (!(settings.leaseMs > 0)) throw new RangeError(`leaseMs must be positive, got ${settings.leaseMs}`);
    if (!Number.isInteger(settings.maxAttempts) || settings.maxAttempts < 1) {
      throw new RangeError(`maxAttempts must be a positive integer, got ${settings.maxAttempts}`);
    }
    if (settings.name.includes(':'))
      throw new RangeError(`queue name must not contain ":", got ${JSON.stringify(settings.name)}`);
    this.#settings = settings;
    // disconnectTimeout: ioredis holds a closed connection that never opened for this long
    // (default 2 s), which kept `codefleet enqueue` alive after reporting Redis down.
    this.#producer = new Redis(settings.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      lazyConnect: false,
      disconnectTimeout: 200,
    });
    // An unreachable Redis surfaces as rejected commands; the default 'error' handler
    // would print every reconnect attempt.
    this.#producer.on('error', () => undefined);
    this.#access = new RedisAccessWatch(settings.url, 'queue.bullmq.url');
    this.#access.watch(this.#producer);
    this.#queue = new BullQueue(settings.name, { connection: this.#producer, prefix: settings.prefix });
    this.#queue.on('error', () => undefined);
  }

  async enqueue(input: Job): Promise<EnqueueResult> {
    const job = parseJob(input);
    await this.#connected();
    const added = await this.#queue
      .add('job', job, {
        jobId: bullJobId(job.id),
        priority: priorityOf(job.priority),
        attempts: 1,
        deduplication: { id: job.idempotency_key },
        removeOnComplete: { age: keepCompletedSeconds },
        removeOnFail: false,
      })
      .catch(this.#access.rethrow);
    if (added.id === bullJobId(job.id)) return { id: job.id, deduplicated: !(await this.#firstToAdd(added.id)) };
    return { id: added.id === undefined ? job.id : await jobIdOf(this.#queue, added.id), deduplicated: true };
  }

  /**
   * Whether this call added job `bullId`. BullMQ answers an id it holds already (a replayed
   * delivery, or the same one twice at once) with that job, exactly as if it had just added
   * it; so the first caller marks the job's hash, atomically, and every later one finds the
   * mark. The mark lives and goes with the job. A job already gone counts as added.
   */
  async #firstToAdd(bullId: string): Promise<boolean> {
    const marked = await this.#producer.eval(markAdded, 1, this.#queue.toKey(bullId)).catch(this.#access.rethrow);
    return marked !== 0;
  }

  /** Adds a payload as is, skipping validation: what a foreign producer could do (tests). */
  async injectRaw(payload: string): Promise<void> {
    await this.#queue.add('job', payload, {
      jobId: `raw~${randomUUID()}`,
      priority: priorityOf('normal'),
      attempts: 1,
    });
  }

  async claim(options: ClaimOptions): Promise<Lease | undefined> {
    const worker = this.#claimer();
    const deadline = Date.now() + Math.max(0, options.waitMs ?? 0);
    const pollMs = this.#settings.pollMs ?? 200;
    for (;;) {
      if (this.#closed || options.signal?.aborted) return undefined;
      const lockToken = randomUUID();
      if (this.#access.refused && this.#workerConnection?.status !== 'ready') throw this.#access.refused;
      await this.#age(options.signal);
      if (options.signal?.aborted) return undefined;
      // With Redis unreachable the fetch waits for it (never-give-up connection): a
      // shutdown must not, nor a refused password. A fetch that still lands after either
      // gives its job back.
      const giveBack = (late: BullJob | undefined) => {
        if (late && !this.#closed) void late.moveToWait(lockToken).catch(() => undefined);
      };
      const fetching = this.#access.guard(
        worker.getNextJob(lockToken, { block: false }) as Promise<BullJob | undefined>,
        giveBack,
      );
      const fetched = await untilAborted(fetching, options.signal, giveBack);
      if (fetched) {
        const lease = await this.#admit(fetched, lockToken);
        if (lease) return lease;
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      const aborted = await sleep(Math.min(pollMs, left), false, { signal: options.signal }).catch(() => true);
      if (aborted) return undefined;
    }
  }

  /**
   * An aging pass (see {@link ageWaiting}) at most once a second per process: each is a few
   * Redis reads. Awaited, so the fetch after it sees its moves, but only until `signal`
   * aborts: a claim stays abortable while Redis is unreachable. A failed pass is skipped.
   */
  async #age(signal: AbortSignal | undefined): Promise<void> {
    const now = Date.now();
    if (now - this.#agedAt < 1_000 || !this.#workerConnection) return;
    this.#agedAt = now;
    const agingMs = this.#settings.agingMs ?? defaultAgingMs;
    const pass = ageWaiting(this.#workerConnection, this.#queue, now, agingMs).catch(() => undefined);
    await untilAborted(pass, signal, () => undefined);
  }

  /** Waiting jobs; a job a full group holds back is in BullMQ's delayed set, marked with the limit. */
  async pending(options: { limit?: number } = {}): Promise<PendingJob[]> {
    await this.#connected();
    return pendingJobs(this.#producer, this.#queue, options.limit ?? 100).catch(this.#access.rethrow);
  }

  /** See {@link cancelWaiting}. */
  async cancelPending(id: string): Promise<CancelPendingResult> {
    await this.#connected();
    return cancelWaiting(this.#queue, id).catch(this.#access.rethrow);
  }

  async stats(): Promise<QueueStats> {
    await this.#connected();
    return bullmqStats(this.#queue, this.#producer, this.#access.rethrow);
  }

  async deadLetters(options: { limit?: number } = {}): Promise<DeadLetter[]> {
    return listDeadLetters(this.#deadLetterSide(), options);
  }

  /** See {@link redriveDeadLetter}. */
  async redrive(id: string): Promise<RedriveResult> {
    return redriveDeadLetter(this.#deadLetterSide(), id);
  }

  /** Every failed BullMQ job of dead letter `id` (a crash mid-redrive can leave two). */
  async drop(id: string): Promise<DropResult> {
    return dropDeadLetter(this.#deadLetterSide(), id);
  }

  /**
   * BullMQ's completed and failed (dead-lettered) jobs that finished before `before`, by its
   * own `clean`, `batch` jobs per call (each one Lua script in Redis); then the completed
   * ones past the newest `keepCompleted`, read from the completed set newest first.
   */
  async trim(options: QueueTrimOptions): Promise<QueueTrim> {
    await this.#connected();
    const batch = options.batch ?? 500;
    const trimmed: QueueTrim = { completed: 0, deadLetters: 0 };
    const { before, keepCompleted } = options;
    const clean = async (type: 'completed' | 'failed', grace: number) => {
      let total = 0;
      for (;;) {
        const removed = await this.#queue.clean(grace, batch, type).catch(this.#access.rethrow);
        total += removed.length;
        if (removed.length < batch) return total;
      }
    };
    if (before !== undefined) {
      const grace = Math.max(0, Date.now() - before);
      trimmed.completed += await clean('completed', grace);
      trimmed.deadLetters += await clean('failed', grace);
    }
    if (keepCompleted !== undefined) trimmed.completed += await this.#trimCompletedPast(keepCompleted, batch);
    return trimmed;
  }

  /** Removes the completed jobs past the newest `keep`, `batch` at a time; resolves how many. */
  async #trimCompletedPast(keep: number, batch: number): Promise<number> {
    let total = 0;
    for (;;) {
      const ids = await this.#queue.getRanges(['completed'], keep, keep + batch - 1, false).catch(this.#access.rethrow);
      let removed = 0;
      for (const id of ids) removed += await this.#queue.remove(id).catch(this.#access.rethrow);
      total += removed;
      // None removed (each locked, say): the same range would come back, so stop here.
      if (ids.length < batch || removed === 0) return total;
    }
  }

  #deadLetterSide(): DeadLetterSide {
    return { queue: this.#queue, maxAttempts: this.#settings.maxAttempts, connected: () => this.#connected() };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Never connected (Redis down): nothing to flush, and BullMQ's close would wait for it.
    if (this.#producer.status !== 'ready') this.#producer.disconnect();
    await this.#worker?.close(true).catch(() => undefined);
    await this.#queue.close().catch(() => undefined);
    // BullMQ leaves connections it was handed open; they are ours to end.
    this.#workerConnection?.disconnect();
    this.#producer.disconnect();
  }

  /**
   * The claiming side, created on first claim: a BullMQ worker without a processor, with
   * its own never-give-up connection and the stalled checker that turns expired leases
   * into redeliveries.
   */
  #claimer(): BullWorker {
    if (this.#worker) return this.#worker;
    const { leaseMs } = this.#settings;
    const connection = new Redis(this.#settings.url, {
      maxRetriesPerRequest: null,
      enableOfflineQueue: true,
      disconnectTimeout: 200,
    });
    connection.on('error', () => undefined);
    this.#access.watch(connection);
    this.#workerConnection = connection;
    const worker = new BullWorker(this.#settings.name, null, {
      connection,
      prefix: this.#settings.prefix,
      autorun: false,
      lockDuration: leaseMs,
      // Checked often enough that an expired lease is noticed within about half a lease;
      // never more often than every 100 ms.
      stalledInterval: this.#settings.stalledCheckMs ?? Math.max(100, Math.floor(leaseMs / 2)),
      // Expired leases count as attempts here (claim buries the job), not in BullMQ.
      maxStalledCount: Number.MAX_SAFE_INTEGER,
    });
    worker.on('error', () => undefined);
    void worker.startStalledCheckTimer().catch(() => undefined);
    this.#worker = worker;
    this.#slots = new RedisSlots(connection, `${this.#settings.prefix}:${this.#settings.name}:cf-slots:`);
    return worker;
  }

  /**
   * Turns a fetched BullMQ job into a lease, or buries it (attempts spent, malformed).
   * `lockToken` is BullMQ's lock on the job; the lease's own token, which fences
   * publishing, is new for every claim, because a fetch-next chain keeps one lock token
   * from job to job.
   */
  async #admit(fetched: BullJob, lockToken: string): Promise<Lease | undefined> {
    const { maxAttempts } = this.#settings;
    const attempt = fetched.attemptsStarted;
    if (attempt > maxAttempts) {
      await fetched.moveToFailed(
        new Error(
          `lease expired on attempt ${attempt - 1} of ${maxAttempts} (the worker stopped heartbeating); attempts exhausted`,
        ),
        lockToken,
        false,
      );
      return undefined;
    }
    const read = readJob(fetched.data);
    if (!('job' in read)) {
      await fetched.moveToFailed(new Error(`malformed job: ${read.error}`), lockToken, false);
      return undefined;
    }
    const token = randomUUID();
    const groups = slotGroups(read.job, this.#settings.limits);
    const slots = this.#slots;
    if (groups.length > 0 && slots && this.#workerConnection) {
      const full = await slots.acquire(groups, token, this.#settings.leaseMs);
      if (full) {
        await holdJob(this.#workerConnection, this.#queue, { fetched, lockToken }, full, Date.now() + holdRecheckMs);
        return undefined;
      }
      await unhold(this.#workerConnection, this.#queue, fetched);
    }
    return this.#lease(fetched, lockToken, read.job, attempt, token);
  }

  /** The lease on a fetched job held under `lockToken`; see {@link bullmqLease}. */
  #lease(fetched: BullJob, lockToken: string, job: Job, attempt: number, token: string): Lease {
    const side: LeaseSide = {
      settings: this.#settings,
      producer: this.#producer,
      queue: this.#queue,
      closed: () => this.#closed,
      admitNext: (next, token) => this.#admitNext(next, token),
      slots: this.#slots,
      wake: (groups) => (this.#workerConnection ? wakeHeld(this.#workerConnection, this.#queue, groups) : undefined),
    };
    return bullmqLease(side, fetched, lockToken, job, attempt, token);
  }

  /**
   * The job a completion script fetched (`[data, id, ...]` as BullMQ returns it, or
   * nothing), admitted like a claimed one. A failure to bury a bad one is not the ack's
   * failure: that job keeps its lock until it expires and is then delivered again.
   */
  async #admitNext(next: unknown, lockToken: string): Promise<Lease | undefined> {
    if (!Array.isArray(next) || !next[0] || typeof next[1] !== 'string') return undefined;
    try {
      // The ack itself succeeded: a next job that cannot even be read must not make it
      // look failed. That job keeps its lock until it expires and is delivered again.
      const fetched = BullJob.fromJSON(this.#claimer(), next[0] as JobJson, next[1]);
      return await this.#admit(fetched, lockToken);
    } catch {
      return undefined;
    }
  }

  /**
   * Waits for the producer connection, at most `connectTimeoutMs`: without an offline
   * queue a command sent while connecting would fail at once, and BullMQ itself would
   * wait for Redis forever.
   */
  async #connected(): Promise<void> {
    const redis = this.#producer;
    if (redis.status === 'ready') return;
    if (this.#access.refused) throw this.#access.refused;
    // One wait shared by every caller: a burst of enqueues adds one listener, not hundreds.
    this.#ready ??= new Promise<void>((resolve, reject) => {
      const timeoutMs = this.#settings.connectTimeoutMs ?? 5_000;
      const done = (error?: Error) => {
        clearTimeout(timer);
        stopWatching();
        redis.off('ready', onReady);
        this.#ready = undefined;
        if (error) reject(error);
        else resolve();
      };
      const onReady = () => done();
      const stopWatching = this.#access.onRefused(done);
      const timer = setTimeout(
        () =>
          done(
            new CodefleetError(
              'queue_unavailable',
              `Redis at ${redactUrlCredentials(this.#settings.url)} is not reachable (no connection within ${timeoutMs} ms)`,
              { verdict: 'transient' },
            ),
          ),
        timeoutMs,
      );
      redis.on('ready', onReady);
    });
    return this.#ready;
  }
}
