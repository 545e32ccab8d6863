import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { BullJob, BullQueue, BullWorker, type JobJson } from './bull-classes.js';
import { Redis } from 'ioredis';
import {
  CodefleetError,
  LeaseLostError,
  parseJob,
  parseJobJson,
  redactUrlCredentials,
  type Job,
} from '@codefleet/core';
import type {
  ClaimOptions,
  DeadLetter,
  DropResult,
  EnqueueResult,
  Lease,
  Queue,
  QueueStats,
  RedriveResult,
} from '../port.js';
import type { BullmqQueueSettings } from '../settings.js';
import { RedisAccessWatch } from '../redis-access.js';
import { bullJobId, isLockLost, priorityOf, redriveJobId } from './ids.js';

/**
 * `promise`'s value, or undefined as soon as `signal` aborts; a value that arrives after
 * the abort goes to `late` (never lost silently, never an unhandled rejection).
 */
function untilAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  late: (value: T) => void,
): Promise<T | undefined> {
  if (signal === undefined) return promise;
  return new Promise<T | undefined>((resolve, reject) => {
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      resolve(undefined);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (aborted) late(value);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (!aborted) reject(error);
      },
    );
  });
}

/**
 * The enqueue time (BullMQ's `timestamp`) of the longest-waiting job, without reading every
 * waiting job: the oldest of the wait list (FIFO: its tail), the first of each priority in
 * the prioritized set (scored priority × 2^32 + an enqueue counter, so the first of a
 * priority is its oldest), and the 50 delayed jobs due soonest. Exact for ready jobs; for
 * delayed ones (retries in backoff) a job due later than those 50 and older than all of
 * them is missed, so the figure can be late by that much, never earlier than the truth.
 */
const oldestQueuedScript = `
local ids = {}
local tail = redis.call('LINDEX', KEYS[1], -1)
if tail then table.insert(ids, tail) end
for p = 1, 3 do
  local first = redis.call('ZRANGEBYSCORE', KEYS[2], p * 4294967296, (p + 1) * 4294967296 - 1, 'LIMIT', 0, 1)
  if first[1] then table.insert(ids, first[1]) end
end
for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, 49)) do table.insert(ids, id) end
local oldest = false
for _, id in ipairs(ids) do
  local at = tonumber(redis.call('HGET', ARGV[1] .. id, 'timestamp'))
  if at and (not oldest or at < oldest) then oldest = at end
end
return oldest
`;

/** How much of a malformed payload the dead letter keeps. */
const rawLimit = 4_096;
/** Completed jobs are kept this long for stats and audits, then BullMQ trims them. */
const keepCompletedSeconds = 7 * 24 * 3_600;

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
    return { id: added.id === undefined ? job.id : await this.#jobIdOf(added.id), deduplicated: true };
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

  async stats(): Promise<QueueStats> {
    await this.#connected();
    const c = await this.#queue
      .getJobCounts('wait', 'prioritized', 'waiting-children', 'delayed', 'active', 'failed', 'completed')
      .catch(this.#access.rethrow);
    const ready = (c.wait ?? 0) + (c.prioritized ?? 0) + (c['waiting-children'] ?? 0);
    const delayed = c.delayed ?? 0;
    const key = (type: string) => this.#queue.toKey(type);
    const oldest = (await this.#producer.eval(
      oldestQueuedScript,
      3,
      key('wait'),
      key('prioritized'),
      key('delayed'),
      key(''),
    )) as number | null;
    return {
      ready,
      delayed,
      inFlight: c.active ?? 0,
      deadLetter: c.failed ?? 0,
      completed: c.completed ?? 0,
      depth: ready + delayed,
      ...(oldest === null ? {} : { oldestQueuedAt: Number(oldest) }),
    };
  }

  async deadLetters(options: { limit?: number } = {}): Promise<DeadLetter[]> {
    await this.#connected();
    const limit = options.limit ?? 1_000;
    const failed = await this.#queue.getJobs(['failed'], 0, Math.max(0, limit - 1), true);
    return failed
      .filter((j): j is BullJob => j !== undefined && j !== null)
      .map((j) => {
        const job = readJob(j.data);
        const raw = typeof j.data === 'string' ? j.data : JSON.stringify(j.data ?? null);
        return {
          id: 'job' in job ? job.job.id : (j.id ?? ''),
          reason: j.failedReason || 'unknown',
          attempts: Math.min(j.attemptsStarted, this.#settings.maxAttempts),
          deadAt: j.finishedOn ?? j.timestamp,
          ...('job' in job ? { job: job.job } : {}),
          raw: raw.slice(0, rawLimit),
        };
      });
  }

  /**
   * A valid job goes back as a new BullMQ job (fresh attempts, its deduplication id
   * restored) before the failed one is removed, so a crash in between leaves a
   * duplicate in the dead letter, never a lost job. A malformed one is retried as is.
   */
  async redrive(id: string): Promise<RedriveResult> {
    const [failed] = await this.#failedWithId(id);
    if (!failed?.id) return { status: 'not_found' };
    const read = readJob(failed.data);
    if (!('job' in read)) {
      await failed.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      return { status: 'redriven', id };
    }
    const job = read.job;
    const newId = redriveJobId(job.id, Date.now());
    const added = await this.#queue.add('job', job, {
      jobId: newId,
      priority: priorityOf(job.priority),
      attempts: 1,
      deduplication: { id: job.idempotency_key },
      removeOnComplete: { age: keepCompletedSeconds },
      removeOnFail: false,
    });
    if (added.id !== newId) {
      // Deduplicated: another job with the same key is queued or running.
      return { status: 'duplicate_active', activeId: added.id === undefined ? '' : await this.#jobIdOf(added.id) };
    }
    await failed.remove();
    return { status: 'redriven', id };
  }

  /** Every failed BullMQ job of dead letter `id` (a crash mid-redrive can leave two). */
  async drop(id: string): Promise<DropResult> {
    const failed = await this.#failedWithId(id);
    for (const j of failed) await j.remove();
    return failed.length > 0 ? { status: 'dropped', id } : { status: 'not_found' };
  }

  async #failedWithId(id: string): Promise<BullJob[]> {
    await this.#connected();
    return (await this.#queue.getJobs(['failed'], 0, -1, true)).filter((j): j is BullJob => {
      const read = j ? readJob(j.data) : undefined;
      return read !== undefined && ('job' in read ? read.job.id === id : j?.id === id);
    });
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
    return this.#lease(fetched, lockToken, read.job, attempt);
  }

  /** The lease on a fetched job held under `lockToken`: its settle verbs move the BullMQ job under that lock. */
  #lease(fetched: BullJob, lockToken: string, job: Job, attempt: number): Lease {
    const { maxAttempts, leaseMs } = this.#settings;
    const token = randomUUID();
    const lost = (error: unknown): never => {
      if (isLockLost(error))
        throw new LeaseLostError(
          job.id,
          `lease on job ${job.id} was lost: another claimer took it over or it was settled`,
        );
      throw error;
    };
    let expiresAt = Date.now() + leaseMs;
    let settled = false;
    const settle = async <T>(fn: () => Promise<T>): Promise<T> => {
      if (settled) throw new LeaseLostError(job.id, `lease on job ${job.id} was already settled`);
      const result = await fn().catch(lost);
      settled = true;
      return result;
    };
    return {
      job,
      attempt,
      maxAttempts,
      token,
      get expiresAt() {
        return expiresAt;
      },
      heartbeat: async () => {
        if (settled) throw new LeaseLostError(job.id, `lease on job ${job.id} was already settled`);
        const extended = await fetched.extendLock(lockToken, leaseMs).catch(lost);
        if (!extended)
          throw new LeaseLostError(
            job.id,
            `lease on job ${job.id} was lost: the lock expired or another claimer took it over`,
          );
        expiresAt = Date.now() + leaseMs;
      },
      ack: () =>
        settle(async () => {
          await fetched.moveToCompleted('done', lockToken, false);
        }),
      ackAndClaim: async () => {
        // The completion script moves the next job to active under the same lock token,
        // as BullMQ's own worker does: one round trip instead of two.
        const next = await settle(() => fetched.moveToCompleted('done', lockToken, !this.#closed));
        return this.#admitNext(next, lockToken);
      },
      retry: ({ delayMs, reason }) =>
        settle(async () => {
          if (attempt >= maxAttempts) {
            await fetched.moveToFailed(
              new Error(`attempts exhausted (${attempt} of ${maxAttempts}): ${reason}`),
              lockToken,
              false,
            );
            return 'dead_lettered' as const;
          }
          await fetched.moveToDelayed(Date.now() + Math.max(0, delayMs), lockToken);
          return 'retrying' as const;
        }),
      deadLetter: (reason) =>
        settle(async () => {
          await fetched.moveToFailed(new Error(reason), lockToken, false);
        }),
      release: () =>
        settle(async () => {
          // BullMQ counts every activation; a release must not spend an attempt, so the
          // count is given back while the lock is still ours, and taken again if the move fails.
          const client = this.#producer;
          const key = this.#queue.toKey(fetched.id ?? '');
          await client.hincrby(key, 'ats', -1);
          try {
            await fetched.moveToWait(lockToken);
          } catch (error) {
            await client.hincrby(key, 'ats', 1);
            throw error;
          }
        }),
    };
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

  /** The codefleet job id behind a BullMQ job id (its payload's id; the BullMQ id for a malformed one). */
  async #jobIdOf(bullId: string): Promise<string> {
    const found = await this.#queue.getJob(bullId);
    const read = found ? readJob(found.data) : undefined;
    return read && 'job' in read ? read.job.id : bullId;
  }
}

/** Validates a payload as stored: a job object, or a JSON string from a foreign producer. */
function readJob(data: unknown): { job: Job } | { error: string } {
  try {
    return { job: typeof data === 'string' ? parseJobJson(data) : parseJob(data) };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}
