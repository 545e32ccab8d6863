import type { Redis } from 'ioredis';
import type { RunRecord } from '@codefleet/core';
import { daysOf, finishedFields, spendFields, statsDays, statsOf } from './fleet-stats.js';
import type { FleetStats, SpendBy } from './fleet-stats.js';
import type { ScriptCalls } from './redis-scripts.js';

// The fleet's day totals on Redis (fleet-stats.ts): one hash per day (`day:<YYYY-MM-DD>`),
// expiring {@link statsDays} days after its last write, and a marker per counted run so a run
// saved finished again counts once. A range reads one hash and one ledger total per day, in
// one pipeline.

const keepSeconds = statsDays * 86_400;

/** Counts `run` in its day's totals when it is finished and not counted yet. */
export async function recordFinished(
  redis: Redis & ScriptCalls,
  key: (kind: string, id: string) => string,
  run: RunRecord,
  now: number,
): Promise<void> {
  const finished = finishedFields(run, now);
  if (finished === undefined) return;
  await redis.cfFinished(key('counted', run.run_id), key('day', finished.day), keepSeconds, ...finished.fields);
}

/** Queues, on addSpend's MULTI, the attributed amounts of one spend. */
export function queueSpendBy(
  multi: ReturnType<Redis['multi']>,
  dayKey: string,
  usd: number,
  by: SpendBy | undefined,
): void {
  const fields = spendFields(by);
  if (fields.length === 0) return;
  for (const field of fields) multi.hincrbyfloat(dayKey, field, usd);
  multi.expire(dayKey, keepSeconds);
}

/** The totals of a range of days (see `FleetStatsReader`). */
export async function readFleetStats(
  redis: Redis,
  key: (kind: string, id: string) => string,
  range: { from: string; to: string; top?: number },
): Promise<FleetStats> {
  const days = daysOf(range);
  const pipeline = redis.pipeline();
  for (const day of days) pipeline.get(key('spend', day)).hgetall(key('day', day));
  const replies = (await pipeline.exec()) ?? [];
  const read = days.map((day, i) => {
    const [spendError, spent] = replies[2 * i] ?? [null, null];
    const [fieldsError, raw] = replies[2 * i + 1] ?? [null, {}];
    if (spendError) throw spendError;
    if (fieldsError) throw fieldsError;
    const fields: Record<string, number> = {};
    for (const [field, value] of Object.entries((raw ?? {}) as Record<string, string>)) fields[field] = Number(value);
    return { day, spentUsd: Number(spent ?? 0), fields };
  });
  return statsOf(read, range.top);
}
