import type { Redis } from 'ioredis';
import type { QueueStats } from '../port.js';
import type { BullQueue } from './bull-classes.js';

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

/** The queue's counts and its oldest waiting job; the caller has waited for the connection. */
export async function bullmqStats(
  queue: BullQueue,
  producer: Redis,
  rethrow: (error: unknown) => never,
): Promise<QueueStats> {
  const c = await queue
    .getJobCounts('wait', 'prioritized', 'waiting-children', 'delayed', 'active', 'failed', 'completed')
    .catch(rethrow);
  const ready = (c.wait ?? 0) + (c.prioritized ?? 0) + (c['waiting-children'] ?? 0);
  const delayed = c.delayed ?? 0;
  const key = (type: string) => queue.toKey(type);
  const oldest = (await producer.eval(
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
