import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { JournalEntry, JournalQuery, RunSummary } from './port.js';
import { idBefore, writeCursor } from './page-cursor.js';
import { checkJournalQuery, type CheckedQuery } from './query.js';
import { runIndexKeys, setsFor } from './redis-run-index.js';

// The Redis store's reads, apart from its writes.
//
// Runs: a page walks one sorted set of the run indexes (redis-run-index.ts) newest first, from
// the cursor or the `until` bound down to `since`. A query on one filter reads just its set:
// a page costs the page. With several, it walks the smallest of their sets and keeps the runs
// that are in all the others (ZMSCORE per chunk): complete whatever the history, and a walk
// no longer than the smallest set when the matches are sparse. The total is ZCOUNT of the one
// set, or the size of the intersection counted by Redis (ZINTERCARD, needs Redis 7), from a
// copy of the smallest set's time window when the query has one.

/** Entries read per round trip (a run set walked for runs also in others grows it up to `maxChunk`; journal lines). */
const firstChunk = 200;
const maxChunk = 5_000;

/** A run's place in the page order. */
interface Placed {
  id: string;
  ms: number;
}

/** One page of `q` (`total` when `withTotal`) and the cursor of the next, each run summarized by `summarize`. */
export async function readRunPage(
  redis: Redis,
  prefix: string,
  q: CheckedQuery,
  options: { withTotal: boolean; summarize: (runId: string, text: string) => RunSummary },
): Promise<{ runs: RunSummary[]; nextCursor?: string; total?: number }> {
  const keys = runIndexKeys(prefix);
  const filters = setsFor(keys, q);
  const sets = filters.length === 0 ? [keys.all] : await smallestFirst(redis, filters);
  const [walked = keys.all, ...others] = sets;
  const placed = await walk(redis, walked, others, q);
  const shown = placed.slice(0, q.limit);
  const records =
    shown.length === 0
      ? []
      : await redis.pipeline(shown.map(({ id }) => ['hget', `${prefix}run:${id}`, 'record'])).exec();
  const runs: RunSummary[] = [];
  for (const [i, { id }] of shown.entries()) {
    const record = records?.[i]?.[1];
    if (typeof record === 'string') runs.push(options.summarize(id, record));
  }
  const last = shown[shown.length - 1];
  return {
    runs,
    ...(placed.length > q.limit && last !== undefined
      ? { nextCursor: writeCursor({ ms: last.ms, runId: last.id }) }
      : {}),
    ...(options.withTotal ? { total: await countOf(redis, prefix, sets, q) } : {}),
  };
}

async function smallestFirst(redis: Redis, sets: string[]): Promise<string[]> {
  if (sets.length < 2) return sets;
  const sizes = (await redis.pipeline(sets.map((set) => ['zcard', set])).exec()) ?? [];
  return sets
    .map((set, i) => ({ set, size: Number(sizes[i]?.[1] ?? 0) }))
    .sort((a, b) => a.size - b.size)
    .map(({ set }) => set);
}

/** Up to `limit + 1` runs of `set` that are in every one of `others`, in page order from the cursor. */
async function walk(redis: Redis, set: string, others: string[], q: CheckedQuery): Promise<Placed[]> {
  const want = q.limit + 1;
  const { after } = q;
  const top = Math.min(after?.ms ?? Infinity, q.untilMs ?? Infinity);
  const max = top === Infinity ? '+inf' : top;
  const min = q.sinceMs ?? '-inf';
  const found: Placed[] = [];
  let chunk = others.length === 0 ? want : Math.max(want, firstChunk);
  for (let offset = 0; found.length < want;) {
    const flat = await redis.zrevrangebyscore(set, max, min, 'WITHSCORES', 'LIMIT', offset, chunk);
    const entries: Placed[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) entries.push({ id: flat[i] ?? '', ms: Number(flat[i + 1]) });
    offset += entries.length;
    // Runs at the cursor's instant come in descending id order: those up to the cursor's were on earlier pages.
    const fresh = after === undefined ? entries : entries.filter((e) => e.ms < after.ms || idBefore(e.id, after.runId));
    found.push(...(others.length === 0 ? fresh : await inAll(redis, others, fresh)));
    if (entries.length < chunk) break;
    if (others.length > 0) chunk = Math.min(chunk * 4, maxChunk);
  }
  return found.slice(0, want);
}

/** The runs of `placed` that are members of every set of `sets`. */
async function inAll(redis: Redis, sets: string[], placed: Placed[]): Promise<Placed[]> {
  if (placed.length === 0) return [];
  const ids = placed.map(({ id }) => id);
  const scores = (await redis.pipeline(sets.map((set) => ['zmscore', set, ...ids])).exec()) ?? [];
  return placed.filter((_, i) => scores.every(([, found]) => (found as (string | null)[] | undefined)?.[i] != null));
}

/** How many runs are in every set of `sets` (smallest first) within the query's time bounds. */
async function countOf(redis: Redis, prefix: string, sets: string[], q: CheckedQuery): Promise<number> {
  const min = q.sinceMs ?? '-inf';
  const max = q.untilMs ?? '+inf';
  const [smallest = '', ...others] = sets;
  if (others.length === 0) return redis.zcount(smallest, min, max);
  if (q.sinceMs === undefined && q.untilMs === undefined) return Number(await redis.zintercard(sets.length, ...sets));
  // The smallest set's window, copied and intersected in one atomic step, then gone.
  const window = `${prefix}count:${randomUUID()}`;
  const counted = await redis
    .multi()
    .zrangestore(window, smallest, min, max, 'BYSCORE')
    .zintercard(sets.length, window, ...others)
    .del(window)
    .exec();
  const [error, count] = counted?.[1] ?? [null, 0];
  if (error) throw error;
  return Number(count);
}

/** Journal entries are stored as `<seq> <json>`, seq from one counter, newest first per kind. */
export function journalKeys(prefix: string): { seq: string; kind(kind: JournalEntry['kind']): string } {
  return { seq: `${prefix}journal-seq`, kind: (kind) => `${prefix}journal:${kind}` };
}

export async function readJournal(
  redis: Redis,
  prefix: string,
  query: JournalQuery | undefined,
): Promise<JournalEntry[]> {
  const q = checkJournalQuery(query);
  const keys = journalKeys(prefix);
  const kinds: JournalEntry['kind'][] = q.kind !== undefined ? [q.kind] : ['action', 'undelivered_report'];
  const found: { seq: number; entry: JournalEntry }[] = [];
  for (const kind of kinds) {
    // Each kind's list is bounded (journalLimit), so this walk is too.
    let taken = 0;
    for (let offset = 0; taken < q.limit; offset += firstChunk) {
      const lines = await redis.lrange(keys.kind(kind), offset, offset + firstChunk - 1);
      for (const line of lines) {
        const space = line.indexOf(' ');
        const entry = JSON.parse(line.slice(space + 1)) as JournalEntry;
        if (q.runId !== undefined && entry.runId !== q.runId) continue;
        if (taken < q.limit) found.push({ seq: Number(line.slice(0, space)), entry });
        taken += 1;
      }
      if (lines.length < firstChunk) break;
    }
  }
  return found
    .sort((a, b) => b.seq - a.seq)
    .slice(0, q.limit)
    .map(({ entry }) => entry);
}
