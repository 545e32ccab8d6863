import { Redis } from 'ioredis';
import { CodefleetError, redactUrlCredentials, redisRefusalError, redisWhere, type RunRecord } from '@codefleet/core';
import type {
  FenceRejection,
  JournalEntry,
  JournalQuery,
  RunIndexEvent,
  RunPage,
  RunQuery,
  RunStore,
  RunSummary,
  TrimCounts,
  TrimPolicy,
  WorkerInfo,
} from './port.js';
import { boundEntry, boundWorker, checkQuery, facetsOf, journalLimit, readStored } from './query.js';
import { journalKeys, readJournal, readRunPage } from './redis-reads.js';
import { memoizedSummaries } from './summary-memo.js';
import { ensureRunIndexes, indexVersion, runIndexKeys, setsOf } from './redis-run-index.js';
import { formerRequestKey } from './request-key.js';
import { checkRequestKey } from './sqlite-run-store.js';
import { checkSpend } from './spend.js';
import { queueSpendBy, readFleetStats, recordFinished } from './redis-fleet-stats.js';
import type { FleetStats, SpendBy } from './fleet-stats.js';
import { scripts, type ScriptCalls } from './redis-scripts.js';
import { trimRedisStore } from './redis-trim.js';
import { runVersion } from './version.js';

// Each script is one atomic step in Redis (redis-scripts.ts); KEYS and ARGV are listed there.

/**
 * A task's rejected late writes live 90 days past the newest (retention's default age: a
 * scan for old ones would read every task's key), the newest 100 of them.
 */
const rejectionKeepMs = 90 * 86_400_000;
const rejectionKeepCount = 100;

/** Settings of {@link RedisRunStore}. */
export interface RedisRunStoreOptions {
  url: string;
  /** Prefix of every key; several fleets can share one Redis. */
  prefix: string;
  /**
   * Fail fast, for one-shot commands (`codefleet runs`, `show`, `doctor`): connect once,
   * within this many ms, and reject with `store_unavailable` when Redis cannot be reached.
   * Unset (workers, producers): commands wait through a Redis restart.
   */
  connectTimeoutMs?: number;
  /** Journal entries kept per kind (default {@link journalLimit}); for tests of the bound. */
  journalLimit?: number;
  /** Hears when runs saved before the run indexes are indexed, at the first read that needs them. */
  onIndexMigration?: (event: RunIndexEvent) => void;
}

/**
 * Run records and task leases in Redis, for a fleet: every worker on every host, and the
 * CLI anywhere, read and write the same. Leases are keys with a TTL, so an expired lease
 * simply disappears; every compare-and-set is a Lua script.
 */
export class RedisRunStore implements RunStore {
  readonly #client: Redis & ScriptCalls;
  readonly #prefix: string;
  readonly #journalLimit: number;
  /** Fail-fast mode: the one connection attempt, made on first use. */
  readonly #connect: (() => Promise<void>) | undefined;
  #connecting: Promise<void> | undefined;
  readonly #onIndexMigration: ((event: RunIndexEvent) => void) | undefined;
  /** The run indexes checked (and migrated when they were not), once per store; again after a failure. */
  #indexed: Promise<void> | undefined;
  /** Summaries of the records pages read lately (summary-memo.ts). */
  readonly #summarize = memoizedSummaries();

  constructor(options: RedisRunStoreOptions) {
    const failFast = options.connectTimeoutMs !== undefined;
    // Workers: commands wait through a Redis restart instead of failing the job's audit
    // trail. (Auto-pipelining was measured slower here: the worker loop's commands depend
    // on each other, so there is little to batch and the extra turn adds latency.)
    // ioredis keeps a process alive for disconnectTimeout (2 s) after closing a connection
    // that never opened; a CLI with Redis down should exit as soon as it has said so.
    const redis = new Redis(
      options.url,
      failFast
        ? {
            lazyConnect: true,
            connectTimeout: options.connectTimeoutMs,
            retryStrategy: () => null,
            maxRetriesPerRequest: 1,
            disconnectTimeout: 200,
          }
        : { maxRetriesPerRequest: null, disconnectTimeout: 200 },
    );
    // The cause of a failed connect: the rejection itself only says "Connection is closed".
    let lastError: Error | undefined;
    redis.on('error', (error: Error) => {
      lastError = error;
    });
    for (const [name, definition] of Object.entries(scripts)) redis.defineCommand(name, definition);
    this.#client = redis as Redis & ScriptCalls;
    this.#prefix = `${options.prefix}:runs:`;
    this.#journalLimit = options.journalLimit ?? journalLimit;
    this.#onIndexMigration = options.onIndexMigration;
    const where = redactUrlCredentials(options.url);
    this.#connect = failFast
      ? async () => {
          // connectTimeout covers only the TCP connect: a peer that accepts and never answers
          // (or a Redis still loading its data) would keep connect() waiting.
          let timer: NodeJS.Timeout | undefined;
          const timedOut = new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`no answer within ${options.connectTimeoutMs} ms`)),
              options.connectTimeoutMs,
            );
          });
          try {
            await Promise.race([redis.connect(), timedOut]);
          } catch (error) {
            redis.disconnect();
            const cause = lastError ?? (error as Error);
            throw (
              redisRefusalError(cause, {
                code: 'store_unavailable',
                where: redisWhere(options.url),
                setting: 'store.redis_url',
              }) ??
              new CodefleetError(
                'store_unavailable',
                `the run store's Redis at ${where} is not reachable: ${redactUrlCredentials(cause.message)}`,
                { verdict: 'transient', cause },
              )
            );
          } finally {
            clearTimeout(timer);
          }
        }
      : undefined;
  }

  /** The client, once connected in fail-fast mode; at once otherwise. */
  get #redis(): Promise<Redis & ScriptCalls> {
    if (!this.#connect) return Promise.resolve(this.#client);
    this.#connecting ??= this.#connect();
    return this.#connecting.then(() => this.#client);
  }

  #key(kind: string, id: string): string {
    return `${this.#prefix}${kind}:${id}`;
  }

  async save(run: RunRecord): Promise<void> {
    const facets = facetsOf(run);
    const keys = runIndexKeys(this.#prefix);
    await (
      await this.#redis
    ).cfSave(
      this.#key('run', run.run_id),
      keys.all,
      keys.version,
      runVersion(run),
      JSON.stringify(run),
      facets.createdMs,
      run.run_id,
      JSON.stringify(setsOf(keys, facets)),
      indexVersion,
    );
    await recordFinished(await this.#redis, (kind, id) => this.#key(kind, id), run, Date.now());
  }

  async fleetStats(range: { from: string; to: string; top?: number }): Promise<FleetStats> {
    return readFleetStats(await this.#redis, (kind, id) => this.#key(kind, id), range);
  }

  async get(runId: string): Promise<RunRecord | undefined> {
    const record = await (await this.#redis).hget(this.#key('run', runId), 'record');
    return record === null ? undefined : readStored(runId, record);
  }

  async list(query?: RunQuery): Promise<RunSummary[]> {
    const q = checkQuery(query);
    return (
      await readRunPage(await this.#indexedRedis(), this.#prefix, q, {
        withTotal: false,
        summarize: this.#summarize,
      })
    ).runs;
  }

  async page(query?: RunQuery): Promise<RunPage> {
    const q = checkQuery(query);
    const { runs, nextCursor, total } = await readRunPage(await this.#indexedRedis(), this.#prefix, q, {
      withTotal: true,
      summarize: this.#summarize,
    });
    return { runs, total: total ?? runs.length, ...(nextCursor === undefined ? {} : { nextCursor }) };
  }

  async trim(policy: TrimPolicy): Promise<TrimCounts> {
    // The sets say which runs are active: a store from before them is indexed first.
    return trimRedisStore(await this.#indexedRedis(), this.#prefix, policy);
  }

  /** The client, once the run indexes hold every run (see redis-run-index). */
  async #indexedRedis(): Promise<Redis & ScriptCalls> {
    const redis = await this.#redis;
    this.#indexed ??= ensureRunIndexes(redis, this.#prefix, this.#onIndexMigration).catch((error: unknown) => {
      this.#indexed = undefined;
      throw error;
    });
    await this.#indexed;
    return redis;
  }

  async heartbeatWorker(worker: WorkerInfo, ttlMs: number): Promise<void> {
    // Score 0 for all: ZRANGE then returns them ordered by id.
    await (
      await this.#redis
    )
      .multi()
      .set(this.#key('worker', worker.id), JSON.stringify(boundWorker(worker)), 'PX', Math.max(1, Math.ceil(ttlMs)))
      .zadd(`${this.#prefix}workers`, 0, worker.id)
      .exec();
  }

  async removeWorker(workerId: string): Promise<void> {
    await (
      await this.#redis
    )
      .multi()
      .del(this.#key('worker', workerId))
      .zrem(`${this.#prefix}workers`, workerId)
      .exec();
  }

  async listWorkers(): Promise<WorkerInfo[]> {
    const infos = (await (
      await this.#redis
    ).cfListWorkers(`${this.#prefix}workers`, this.#key('worker', ''))) as string[];
    return infos.map((info) => JSON.parse(info) as WorkerInfo);
  }

  async record(entry: JournalEntry): Promise<void> {
    const bounded = boundEntry(entry);
    const keys = journalKeys(this.#prefix);
    await (await this.#redis).cfJournal(keys.seq, keys.kind(bounded.kind), JSON.stringify(bounded), this.#journalLimit);
  }

  async journal(query?: JournalQuery): Promise<JournalEntry[]> {
    return readJournal(await this.#redis, this.#prefix, query);
  }

  async acquire(taskKey: string, token: string, ttlMs: number): Promise<boolean> {
    return (
      (await (await this.#redis).cfAcquire(this.#key('lease', taskKey), token, Math.max(1, Math.ceil(ttlMs)))) === 1
    );
  }

  async renew(taskKey: string, token: string, ttlMs: number): Promise<boolean> {
    return (await (await this.#redis).cfRenew(this.#key('lease', taskKey), token, Math.max(1, Math.ceil(ttlMs)))) === 1;
  }

  async fence(taskKey: string, token: string, action: string, runId: string): Promise<boolean> {
    const rejection: FenceRejection = { taskKey, runId, token, action, at: Date.now() };
    return (
      (await (
        await this.#redis
      ).cfFence(
        this.#key('lease', taskKey),
        this.#key('rejected', taskKey),
        token,
        JSON.stringify(rejection),
        rejectionKeepMs,
        rejectionKeepCount,
      )) === 1
    );
  }

  async release(taskKey: string, token: string): Promise<void> {
    await (await this.#redis).cfRelease(this.#key('lease', taskKey), token);
  }

  async handOver(
    from: { taskKey: string; token: string },
    to: { taskKey: string; token: string },
    ttlMs: number,
  ): Promise<boolean> {
    return (
      (await (
        await this.#redis
      ).cfHandOver(
        this.#key('lease', from.taskKey),
        this.#key('lease', to.taskKey),
        from.token,
        to.token,
        Math.max(1, Math.ceil(ttlMs)),
      )) === 1
    );
  }

  async rejections(taskKey: string): Promise<FenceRejection[]> {
    const entries = await (await this.#redis).lrange(this.#key('rejected', taskKey), 0, -1);
    return entries.map((entry) => JSON.parse(entry) as FenceRejection);
  }

  async addSpend(day: string, usd: number, by?: SpendBy): Promise<number> {
    checkSpend(day, usd);
    // INCRBYFLOAT is atomic; a day's total is kept 40 days, long enough for any report on it.
    const multi = (await this.#redis)
      .multi()
      .incrbyfloat(this.#key('spend', day), usd)
      .expire(this.#key('spend', day), 40 * 24 * 3_600);
    queueSpendBy(multi, this.#key('day', day), usd, by);
    const replies = (await multi.exec()) ?? [];
    const failed = replies.find(([error]) => error);
    if (failed) throw failed[0];
    return Number(replies[0]?.[1] ?? 0);
  }

  async spentOn(day: string): Promise<number> {
    checkSpend(day);
    return Number((await (await this.#redis).get(this.#key('spend', day))) ?? 0);
  }

  async requestCancel(taskKey: string, by: string): Promise<void> {
    // Kept a week: long enough for any queued job to be claimed and see it.
    await (
      await this.#redis
    ).set(this.#key('cancel', taskKey), JSON.stringify({ by, at: Date.now() }), 'EX', 7 * 24 * 3_600);
  }

  async cancelRequested(taskKey: string): Promise<{ by: string; at: number } | undefined> {
    const value = await (await this.#redis).get(this.#key('cancel', taskKey));
    return value === null ? undefined : (JSON.parse(value) as { by: string; at: number });
  }

  async clearCancel(taskKey: string): Promise<void> {
    await (await this.#redis).del(this.#key('cancel', taskKey));
  }

  async bindRequest(key: string, value: string, ttlMs: number): Promise<{ value: string; bound: boolean }> {
    checkRequestKey(key, value);
    const [own, former] = this.#requestKeys(key);
    const [held, bound] = (await (await this.#redis).cfBindRequest(own, former, value, ttlMs)) as [string, number];
    return { value: held, bound: bound === 1 };
  }

  async setRequest(key: string, value: string, ttlMs: number): Promise<void> {
    checkRequestKey(key, value);
    const [own, former] = this.#requestKeys(key);
    const multi = (await this.#redis).multi().set(own, value, 'PX', ttlMs);
    if (former !== own) multi.del(former);
    await multi.exec();
  }

  async lookupRequest(key: string): Promise<string | undefined> {
    const [own, former] = this.#requestKeys(key);
    const [value, formerValue] = await (await this.#redis).mget(own, former);
    return value ?? formerValue ?? undefined;
  }

  async releaseRequest(key: string): Promise<void> {
    await (await this.#redis).del(...new Set(this.#requestKeys(key)));
  }

  /** `key` in Redis, and its former spelling there (`key` again when it has none). */
  #requestKeys(key: string): [string, string] {
    return [this.#key('request', key), this.#key('request', formerRequestKey(key) ?? key)];
  }

  async close(): Promise<void> {
    this.#client.disconnect();
  }
}
