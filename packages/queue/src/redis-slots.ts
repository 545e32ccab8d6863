import type { Redis } from 'ioredis';
import type { SlotGroup } from './concurrency.js';

/** Redis's own clock, so hosts with skewed clocks agree on when a slot expired. */
const clock = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * Takes a slot in every group KEYS[i] (max ARGV[2 + i]) for holder ARGV[1] until now +
 * ARGV[2] ms, or none: returns 0, or the index of the first full group.
 */
const acquire = `${clock}
local ttl = tonumber(ARGV[2])
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZSCORE', key, ARGV[1]) == false and redis.call('ZCARD', key) >= tonumber(ARGV[2 + i]) then return i end
end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now + ttl, ARGV[1])
  redis.call('PEXPIRE', key, ttl * 2)
end
return 0
`;

/** Moves holder ARGV[1]'s slots to now + ARGV[2] ms; a slot that already expired is not taken again. */
const renew = `${clock}
local ttl = tonumber(ARGV[2])
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, 'XX', now + ttl, ARGV[1])
  redis.call('PEXPIRE', key, ttl * 2)
end
return 1
`;

/**
 * Concurrency slots in Redis, shared by every worker of a fleet (the BullMQ adapter's Redis,
 * the SQS adapter's coordination store). A group is a sorted set of its holders (lease
 * tokens) scored by when the slot expires; a full group's expired members are dropped
 * before it is counted. So a slot ends when its job settles (`release`) or when its lease
 * stops being renewed (a worker that crashed), never later: nothing can leak. Each group's
 * key expires on its own once no renewal keeps it.
 */
export class RedisSlots {
  readonly #redis: Redis;
  readonly #base: string;

  /** `base`: the key prefix of this queue's slots, e.g. `<prefix>:<name>:slots:`. */
  constructor(redis: Redis, base: string) {
    this.#redis = redis;
    this.#base = base;
  }

  /** Takes a slot in each of `groups` for `holder` for `ttlMs`; or answers the group that is full. */
  async acquire(groups: SlotGroup[], holder: string, ttlMs: number): Promise<SlotGroup | undefined> {
    if (groups.length === 0) return undefined;
    const keys = groups.map((group) => this.#base + group.key);
    const full = Number(
      await this.#redis.eval(acquire, keys.length, ...keys, holder, ttlMs, ...groups.map((g) => g.max)),
    );
    return full === 0 ? undefined : groups[full - 1];
  }

  /** Extends `holder`'s slots to `ttlMs` from now (a heartbeat). */
  async renew(groups: SlotGroup[], holder: string, ttlMs: number): Promise<void> {
    if (groups.length === 0) return;
    const keys = groups.map((group) => this.#base + group.key);
    await this.#redis.eval(renew, keys.length, ...keys, holder, ttlMs);
  }

  /** Frees `holder`'s slots (its job settled). */
  async release(groups: SlotGroup[], holder: string): Promise<void> {
    if (groups.length === 0) return;
    const multi = this.#redis.multi();
    for (const group of groups) multi.zrem(this.#base + group.key, holder);
    await multi.exec();
  }
}
