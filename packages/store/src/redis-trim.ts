import type { ChainableCommander, Redis } from 'ioredis';
import { trimBatch, type JournalEntry, type TrimCounts, type TrimPolicy } from './port.js';
import { journalKeys } from './redis-reads.js';
import { runIndexKeys } from './redis-run-index.js';
import type { PipelineScriptCalls, ScriptCalls } from './redis-scripts.js';

// Retention of the Redis store (RunStore.trim): the oldest runs of the set of every run, a
// batch per round trip, each deleted by one script that keeps it if it is active; journal
// entries from the tail of each kind's list. Request keys and fence rejections expire by
// their TTL already.

const journalKinds: JournalEntry['kind'][] = ['action', 'undelivered_report'];

/** Deletes what `policy` lets go from the store under `prefix` (which ends in `runs:`). */
export async function trimRedisStore(
  redis: Redis & ScriptCalls,
  prefix: string,
  policy: TrimPolicy,
): Promise<TrimCounts> {
  const batch = policy.batch ?? trimBatch;
  const runs = await trimRuns(redis, prefix, policy, batch);
  let journal = 0;
  if (policy.before !== undefined) {
    const before = new Date(policy.before).toISOString();
    for (const kind of journalKinds) {
      for (;;) {
        const dropped = Number(await redis.cfTrimJournal(journalKeys(prefix).kind(kind), before, batch));
        journal += dropped;
        if (dropped < batch) break;
      }
    }
  }
  return { runs, journal, requestKeys: 0, rejections: 0 };
}

/**
 * Walks the set of every run from the oldest, a batch at a time; a run goes when it was
 * created before `before` or is older than the newest `keepRuns`, unless active (then it is
 * stepped over: `kept` counts those at the start of the set). Eligibility only grows with
 * age, so the walk ends at the first run that may stay.
 */
async function trimRuns(redis: Redis, prefix: string, policy: TrimPolicy, batch: number): Promise<number> {
  if (policy.before === undefined && policy.keepRuns === undefined) return 0;
  const keys = runIndexKeys(prefix);
  let kept = 0;
  let deleted = 0;
  for (;;) {
    const over = policy.keepRuns === undefined ? 0 : (await redis.zcard(keys.all)) - policy.keepRuns;
    const page = await redis.zrange(keys.all, kept, kept + batch - 1, 'WITHSCORES');
    const ids: string[] = [];
    for (let i = 0; i < page.length; i += 2) {
      const old = policy.before !== undefined && Number(page[i + 1]) < policy.before;
      if (!old && kept + ids.length >= over) break;
      ids.push(page[i] ?? '');
    }
    if (ids.length === 0) return deleted;
    const pipeline = redis.pipeline() as ChainableCommander & PipelineScriptCalls;
    for (const id of ids) pipeline.cfTrimRun(`${prefix}run:${id}`, keys.all, id, keys.active);
    const results = (await pipeline.exec()) ?? [];
    for (const [error, gone] of results) {
      if (error) throw error;
      if (gone === 1) deleted += 1;
      else kept += 1;
    }
    if (ids.length < batch) return deleted;
  }
}
