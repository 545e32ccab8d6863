import type { Redis } from 'ioredis';
import type { Job } from '@codefleet/core';

/**
 * What SQS cannot keep by itself, kept in Redis next to it: which idempotency key is
 * pending or running, the current lease token of every job (an old receipt handle can
 * still delete a message in SQS, so fencing needs a token SQS does not hand out), the
 * attempt count (a re-sent message starts its receive count again), the completed count,
 * and the dead letters with their reasons. Each step is one Lua script, so two workers
 * never see a half-made change.
 *
 * Keys under `<prefix>:<name>:`: `key:<idempotency key>` = `<job id>|<ms>`; `job:<id>`
 * hash (state enqueuing | pending | running | completed | dead | cancelled, token, attempts, key,
 * reason, raw, dead_at, queued_at; repo, requested_by, priority, title for `pending`; held, the
 * limit that last held it back, until it is claimed); `completed` counter; `dead` sorted set of ids by time;
 * `queued` sorted set of the pending jobs' ids by the time they were enqueued (or
 * redriven), so `stats` can say how long the oldest has waited: SQS's own
 * ApproximateAgeOfOldestMessage is a CloudWatch metric, not a queue attribute.
 */

/** A job counts as active for dedup when pending or running, or while still being enqueued (fresh). */
const enqueue = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local sep = string.find(cur, '|', 1, true)
  local curId = string.sub(cur, 1, sep - 1)
  local at = tonumber(string.sub(cur, sep + 1))
  local state = redis.call('HGET', ARGV[4] .. curId, 'state')
  if state == 'pending' or state == 'running' then return curId end
  if (state == false or state == 'enqueuing') and tonumber(ARGV[2]) - at < tonumber(ARGV[3]) then return curId end
end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. ARGV[2])
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'state', 'enqueuing', 'key', ARGV[5], 'attempts', 0)
return false
`;

/** Returns {verdict, attempts}: settled (drop the message), exhausted (bury it) or ok. */
const claim = `
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'completed' or state == 'dead' or state == 'cancelled' then return {'settled', 0} end
redis.call('ZREM', KEYS[2], ARGV[4])
local n = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
if n > tonumber(ARGV[2]) then return {'exhausted', n - 1} end
redis.call('HSET', KEYS[1], 'state', 'running', 'token', ARGV[1])
redis.call('HDEL', KEYS[1], 'held')
if ARGV[3] ~= '' then redis.call('HSETNX', KEYS[1], 'key', ARGV[3]) end
return {'ok', n}
`;

/** 1 when ARGV[1] is still the job's token. */
const owns = `
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then return 1 end
return 0
`;

/**
 * Settles a job when ARGV[1] is its token, or unconditionally when ARGV[1] is '' (burying
 * a message at claim time). ARGV[2] = ack | retry | release | dead.
 */
const settle = `
if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
local action = ARGV[2]
redis.call('HDEL', KEYS[1], 'token')
local function freeKey()
  local key = redis.call('HGET', KEYS[1], 'key')
  if not key then return end
  local cur = redis.call('GET', ARGV[6] .. key)
  if cur and string.sub(cur, 1, string.len(ARGV[5]) + 1) == ARGV[5] .. '|' then redis.call('DEL', ARGV[6] .. key) end
end
local function requeue()
  local at = redis.call('HGET', KEYS[1], 'queued_at') or ARGV[4]
  redis.call('ZADD', KEYS[4], at, ARGV[5])
end
if action == 'ack' then
  redis.call('ZREM', KEYS[4], ARGV[5])
  redis.call('HSET', KEYS[1], 'state', 'completed')
  redis.call('INCR', KEYS[2])
  freeKey()
elseif action == 'dead' then
  redis.call('HSET', KEYS[1], 'state', 'dead', 'reason', ARGV[3], 'dead_at', ARGV[4], 'raw', ARGV[7])
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[5])
  redis.call('ZREM', KEYS[4], ARGV[5])
  freeKey()
elseif action == 'release' then
  redis.call('HSET', KEYS[1], 'state', 'pending')
  redis.call('HINCRBY', KEYS[1], 'attempts', -1)
  requeue()
else
  redis.call('HSET', KEYS[1], 'state', 'pending')
  requeue()
end
return 1
`;

/**
 * Cancels a pending job (1), else 0: its record says cancelled, so the claim that receives its
 * message deletes it unrun (SQS cannot delete a message it has not handed out), and its key is
 * freed at once. KEYS: job, queued. ARGV: id, key prefix.
 */
const cancel = `
if redis.call('HGET', KEYS[1], 'state') ~= 'pending' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'cancelled')
redis.call('HDEL', KEYS[1], 'held')
redis.call('ZREM', KEYS[2], ARGV[1])
local key = redis.call('HGET', KEYS[1], 'key')
local cur = key and redis.call('GET', ARGV[2] .. key)
if cur and string.sub(cur, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. '|' then redis.call('DEL', ARGV[2] .. key) end
return 1
`;

/** Takes a dead job back for redrive: {'ok'} | {'not_found'} | {'duplicate', activeId}. */
const redrive = `
if redis.call('HGET', KEYS[1], 'state') ~= 'dead' then return {'not_found'} end
local key = redis.call('HGET', KEYS[1], 'key')
if key then
  local cur = redis.call('GET', ARGV[3] .. key)
  if cur then
    local sep = string.find(cur, '|', 1, true)
    local curId = string.sub(cur, 1, sep - 1)
    local state = redis.call('HGET', ARGV[4] .. curId, 'state')
    if curId ~= ARGV[1] and (state == 'pending' or state == 'running' or state == 'enqueuing') then return {'duplicate', curId} end
  end
  redis.call('SET', ARGV[3] .. key, ARGV[1] .. '|' .. ARGV[2])
end
redis.call('HSET', KEYS[1], 'state', 'enqueuing', 'attempts', 0)
redis.call('HDEL', KEYS[1], 'reason', 'dead_at')
redis.call('ZREM', KEYS[2], ARGV[1])
return {'ok'}
`;

/** Forgets a dead job for good: 1, or 0 when KEYS[1] is not a dead job's record. */
const drop = `
if redis.call('HGET', KEYS[1], 'state') ~= 'dead' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`;

/**
 * Takes back a job whose message the SQS redrive policy moved away (its record may say
 * anything, a crashed claim's 'running' included): {'ok'} | {'duplicate', activeId}.
 */
const revive = `
local cur = redis.call('GET', KEYS[2])
if cur then
  local sep = string.find(cur, '|', 1, true)
  local curId = string.sub(cur, 1, sep - 1)
  local state = redis.call('HGET', ARGV[3] .. curId, 'state')
  if curId ~= ARGV[1] and (state == 'pending' or state == 'running' or state == 'enqueuing') then return {'duplicate', curId} end
end
redis.call('SET', KEYS[2], ARGV[1] .. '|' .. ARGV[2])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'enqueuing', 'key', ARGV[4], 'attempts', 0)
return {'ok'}
`;

/**
 * The enqueue time of the oldest pending job: the first of KEYS[1] whose record (ARGV[1]
 * .. id) still says pending; a member left behind by a message deleted outside codefleet
 * is dropped on the way (at most 20 per call).
 */
const oldestQueued = `
for _ = 1, 20 do
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if not first[1] then return false end
  if redis.call('HGET', ARGV[1] .. first[1], 'state') == 'pending' then return tonumber(first[2]) end
  redis.call('ZREM', KEYS[1], first[1])
end
return false
`;

/** A job's coordination record, as `deadLetters` reads it. */
export interface JobRecord {
  state?: string;
  attempts?: string;
  reason?: string;
  raw?: string;
  dead_at?: string;
}

/** A pending job's record, as `waiting` reads it (null: not kept, e.g. enqueued before it was). */
export interface WaitingRecord {
  state: string | null | undefined;
  repo: string | null | undefined;
  requestedBy: string | null | undefined;
  priority: string | null | undefined;
  held: string | null | undefined;
  title: string | null | undefined;
}

/** A settle action. */
export type SettleAction = 'ack' | 'retry' | 'release' | 'dead';

/** The coordination store of one SQS queue. */
export class Coordination {
  readonly #redis: Redis;
  readonly #base: string;
  /** How long a key claimed by an enqueue that never finished still blocks a duplicate. */
  readonly #staleEnqueueMs = 60_000;

  constructor(redis: Redis, prefix: string, name: string) {
    this.#redis = redis;
    this.#base = `${prefix}:${name}:`;
  }

  #job(id: string): string {
    return `${this.#base}job:${id}`;
  }

  /** Reserves the key for `id`; returns the id of the active job holding it instead, if any. */
  async reserve(id: string, key: string, now: number): Promise<string | undefined> {
    const result = await this.#redis.eval(
      enqueue,
      2,
      `${this.#base}key:${key}`,
      this.#job(id),
      id,
      now,
      this.#staleEnqueueMs,
      `${this.#base}job:`,
      key,
    );
    return typeof result === 'string' ? result : undefined;
  }

  /** Marks an enqueued (or redriven) job pending once SQS has it, queued since `now`. */
  async pending(
    id: string,
    now: number,
    job?: Pick<Job, 'repo' | 'requested_by' | 'priority' | 'title'>,
  ): Promise<void> {
    const listed = job
      ? ['repo', job.repo, 'requested_by', job.requested_by, 'priority', job.priority, 'title', job.title]
      : [];
    await this.#redis
      .multi()
      .hset(this.#job(id), 'state', 'pending', 'queued_at', now, ...listed)
      .zadd(`${this.#base}queued`, now, id)
      .exec();
  }

  /** Says which limit held a pending job back (`held` is JSON), until it is claimed. */
  async hold(id: string, held: string): Promise<void> {
    await this.#redis.hset(this.#job(id), 'held', held);
  }

  /** The first `limit` pending jobs by enqueue time, with what `pending` lists of them. */
  async waiting(limit: number): Promise<{ id: string; queuedAt: number; record: WaitingRecord }[]> {
    const flat = await this.#redis.zrange(`${this.#base}queued`, 0, Math.max(0, limit - 1), 'WITHSCORES');
    const multi = this.#redis.multi();
    const ids: [string, number][] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) ids.push([flat[i] ?? '', Number(flat[i + 1])]);
    for (const [id] of ids) multi.hmget(this.#job(id), 'state', 'repo', 'requested_by', 'priority', 'held', 'title');
    const rows = (await multi.exec()) ?? [];
    return ids.map(([id, queuedAt], i) => {
      const [state, repo, requestedBy, priority, held, title] = (rows[i]?.[1] ?? []) as (string | null)[];
      return { id, queuedAt, record: { state, repo, requestedBy, priority, held, title } };
    });
  }

  /** Epoch ms at which the oldest pending job was enqueued; undefined when none is pending. */
  async oldestQueuedAt(): Promise<number | undefined> {
    const at = await this.#redis.eval(oldestQueued, 1, `${this.#base}queued`, `${this.#base}job:`);
    return typeof at === 'number' ? at : undefined;
  }

  /** Undoes a reservation whose send failed. */
  async unreserve(id: string, key: string): Promise<void> {
    const current = await this.#redis.get(`${this.#base}key:${key}`);
    if (current?.startsWith(`${id}|`)) await this.#redis.del(`${this.#base}key:${key}`);
    await this.#redis.del(this.#job(id));
  }

  async claim(
    id: string,
    token: string,
    maxAttempts: number,
    key: string,
  ): Promise<{ verdict: 'ok' | 'settled' | 'exhausted'; attempts: number }> {
    const [verdict, attempts] = (await this.#redis.eval(
      claim,
      2,
      this.#job(id),
      `${this.#base}queued`,
      token,
      maxAttempts,
      key,
      id,
    )) as [string, number];
    return { verdict: verdict as 'ok' | 'settled' | 'exhausted', attempts: Number(attempts) };
  }

  async owns(id: string, token: string): Promise<boolean> {
    return (await this.#redis.eval(owns, 1, this.#job(id), token)) === 1;
  }

  /** Settles when `token` still owns the job ('' = unconditionally); false when the lease was lost. */
  async settle(
    id: string,
    token: string,
    action: SettleAction,
    details: { reason?: string; raw?: string; now: number },
  ): Promise<boolean> {
    const result = await this.#redis.eval(
      settle,
      4,
      this.#job(id),
      `${this.#base}completed`,
      `${this.#base}dead`,
      `${this.#base}queued`,
      token,
      action,
      details.reason ?? '',
      details.now,
      id,
      `${this.#base}key:`,
      details.raw ?? '',
    );
    return result === 1;
  }

  async completed(): Promise<number> {
    return Number((await this.#redis.get(`${this.#base}completed`)) ?? 0);
  }

  async deadCount(): Promise<number> {
    return this.#redis.zcard(`${this.#base}dead`);
  }

  /** Dead letters, oldest first, with their records. */
  async dead(limit: number): Promise<{ id: string; record: JobRecord }[]> {
    const ids = await this.#redis.zrange(`${this.#base}dead`, 0, Math.max(0, limit - 1));
    return Promise.all(
      ids.map(async (id) => ({ id, record: (await this.#redis.hgetall(this.#job(id))) as JobRecord })),
    );
  }

  async redrive(
    id: string,
    now: number,
  ): Promise<{ status: 'ok' } | { status: 'not_found' } | { status: 'duplicate'; activeId: string }> {
    const [status, activeId] = (await this.#redis.eval(
      redrive,
      2,
      this.#job(id),
      `${this.#base}dead`,
      id,
      now,
      `${this.#base}key:`,
      `${this.#base}job:`,
    )) as [string, string?];
    if (status === 'duplicate') return { status: 'duplicate', activeId: activeId ?? '' };
    return status === 'ok' ? { status: 'ok' } : { status: 'not_found' };
  }

  /** See the `cancel` script; false when the job is not pending. */
  async cancel(id: string): Promise<boolean> {
    const keys = [this.#job(id), `${this.#base}queued`];
    return (await this.#redis.eval(cancel, 2, ...keys, id, `${this.#base}key:`)) === 1;
  }

  /** Removes a dead job's record and its place among the dead; false when it is not dead. */
  async drop(id: string): Promise<boolean> {
    return (await this.#redis.eval(drop, 2, this.#job(id), `${this.#base}dead`, id)) === 1;
  }

  /** See the `revive` script: a fresh record for a job coming back from the SQS dead-letter queue. */
  async revive(
    id: string,
    key: string,
    now: number,
  ): Promise<{ status: 'ok' } | { status: 'duplicate'; activeId: string }> {
    const [status, activeId] = (await this.#redis.eval(
      revive,
      2,
      this.#job(id),
      `${this.#base}key:${key}`,
      id,
      now,
      `${this.#base}job:`,
      key,
    )) as [string, string?];
    return status === 'duplicate' ? { status: 'duplicate', activeId: activeId ?? '' } : { status: 'ok' };
  }

  /** The raw payload kept with a dead job. */
  async raw(id: string): Promise<string | undefined> {
    return (await this.#redis.hget(this.#job(id), 'raw')) ?? undefined;
  }
}
