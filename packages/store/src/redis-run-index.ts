import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChainableCommander, Redis } from 'ioredis';
import type { RunIndexEvent } from './port.js';
import { facetsOfStored, type CheckedQuery, type RunFacets } from './query.js';
import type { PipelineScriptCalls, ScriptCalls } from './redis-scripts.js';

// The Redis store's run indexes: one sorted set per facet value (query.ts), scored by created
// ms, plus one of every run. The save script files a run in the sets of its facets and takes
// it out of those it left (a run that finishes leaves `by:active` and `by:stage:testing`); the
// sets it is in are kept on the run (`indexed`), so the move is one atomic step with the
// version check. A page walks the smallest set that holds every match (redis-reads.ts).
//
// A store written before these sets (`index-version` below 2) is indexed at the first read
// that needs them: the runs of `by-created`, which every version kept, a batch at a time,
// under a lock so one process does it while the others wait. The sets of the version before
// (`active`, `by-repo:*`, `by-source:*`) are then deleted, and with them `indexes-complete`:
// a reader of that version walks `by-created` and reads each record, as it did for stores
// older than its sets, instead of trusting sets no one keeps any more.

/** The schema of the run indexes this version keeps. */
export const indexVersion = 2;
/** Runs indexed per round trip while migrating. */
const batch = 500;
/** How long the migration lock lasts without renewal: a process that dies holding it delays the others this long. */
const lockMs = 30_000;

/** Key names of the run indexes, under the store's prefix (which ends in `runs:`). */
export function runIndexKeys(prefix: string) {
  const by = (facet: string) => (value: string) => `${prefix}by:${facet}:${value}`;
  return {
    /** Every run: kept by every version, so the migration reads runs from it. */
    all: `${prefix}by-created`,
    active: `${prefix}by:active`,
    stage: by('stage'),
    outcome: by('outcome'),
    repo: by('repo'),
    source: by('source'),
    kind: by('kind'),
    agent: by('agent'),
    version: `${prefix}index-version`,
    lock: `${prefix}index-migration`,
  };
}

type IndexKeys = ReturnType<typeof runIndexKeys>;

/** The sets a run with these facets belongs in (unreadable: the one of every run only). */
export function setsOf(keys: IndexKeys, facets: RunFacets | undefined): string[] {
  if (facets === undefined) return [keys.all];
  return [
    keys.all,
    keys.stage(facets.stage),
    keys.repo(facets.repo),
    keys.source(facets.source),
    keys.kind(facets.kind),
    ...(facets.active ? [keys.active] : []),
    ...(facets.outcome === undefined ? [] : [keys.outcome(facets.outcome)]),
    ...(facets.agent === undefined ? [] : [keys.agent(facets.agent)]),
  ];
}

/** The sets whose intersection is what `q` filters on; empty when it filters on nothing but time. */
export function setsFor(keys: IndexKeys, q: CheckedQuery): string[] {
  const sets: string[] = [];
  const { state } = q;
  if (state !== undefined)
    sets.push(
      'active' in state ? keys.active : 'outcome' in state ? keys.outcome(state.outcome) : keys.stage(state.stage),
    );
  if (q.repo !== undefined) sets.push(keys.repo(q.repo));
  if (q.source !== undefined) sets.push('name' in q.source ? keys.source(q.source.name) : keys.kind(q.source.kind));
  if (q.agent !== undefined) sets.push(keys.agent(q.agent));
  return sets;
}

/**
 * Makes sure the store's runs are in the sets this version reads: at once when they are,
 * else by migrating them (or waiting while another process does).
 */
export async function ensureRunIndexes(
  redis: Redis & ScriptCalls,
  prefix: string,
  report?: (event: RunIndexEvent) => void,
): Promise<void> {
  const keys = runIndexKeys(prefix);
  const token = randomUUID();
  for (;;) {
    if (Number(await redis.get(keys.version)) >= indexVersion) return;
    if ((await redis.set(keys.lock, token, 'PX', lockMs, 'NX')) === 'OK') break;
    await sleep(200);
  }
  try {
    if (Number(await redis.get(keys.version)) >= indexVersion) return;
    await migrate(redis, prefix, keys, token, report);
  } finally {
    await redis.cfRelease(keys.lock, token);
  }
}

async function migrate(
  redis: Redis & ScriptCalls,
  prefix: string,
  keys: IndexKeys,
  token: string,
  report?: (event: RunIndexEvent) => void,
): Promise<void> {
  const started = performance.now();
  const pending = (await redis.zcard(keys.all)) > 0;
  if (pending) report?.({ event: 'started', store: 'redis', schema: indexVersion });
  let runs = 0;
  let cursor = '0';
  do {
    const [next, page] = await redis.zscan(keys.all, cursor, 'COUNT', batch);
    cursor = next;
    const ids = page.filter((_, i) => i % 2 === 0);
    const scores = page.filter((_, i) => i % 2 === 1);
    runs += await indexBatch(redis, prefix, keys, ids, scores);
    await redis.cfRenew(keys.lock, token, lockMs);
  } while (cursor !== '0');
  await dropFormerSets(redis, prefix);
  await redis.set(keys.version, String(indexVersion));
  if (pending)
    report?.({
      event: 'finished',
      store: 'redis',
      schema: indexVersion,
      runs,
      durationMs: Math.round(performance.now() - started),
    });
}

/**
 * Files each run of `ids` in its sets, unless a save of this version already has. A run
 * whose record changed between the read and the script (an older writer) is read again.
 */
async function indexBatch(
  redis: Redis & ScriptCalls,
  prefix: string,
  keys: IndexKeys,
  ids: string[],
  scores: string[],
): Promise<number> {
  // Runs a save of this version has filed (a store partly migrated, or saved to before its first read) are passed over unread.
  const filed = (await redis.pipeline(ids.map((id) => ['hexists', `${prefix}run:${id}`, 'indexed'])).exec()) ?? [];
  let todo = ids.map((id, i) => ({ id, score: scores[i] ?? '0' })).filter((_, i) => filed[i]?.[1] !== 1);
  let indexed = 0;
  while (todo.length > 0) {
    const read = await redis
      .pipeline(todo.map(({ id }) => ['hmget', `${prefix}run:${id}`, 'version', 'record']))
      .exec();
    const filing = redis.pipeline() as ChainableCommander & PipelineScriptCalls;
    const sent: typeof todo = [];
    for (const [i, run] of todo.entries()) {
      const [version, record] = (read?.[i]?.[1] ?? []) as (string | null)[];
      if (version == null || record == null) continue;
      const sets = JSON.stringify(setsOf(keys, facetsOfStored(run.id, record)));
      filing.cfIndexRun(`${prefix}run:${run.id}`, version, run.score, run.id, sets);
      sent.push(run);
    }
    const results = await filing.exec();
    todo = sent.filter((_, i) => results?.[i]?.[1] === 0);
    indexed += sent.length - todo.length;
  }
  return indexed;
}

/** Deletes the sets the version before kept, found by SCAN (their names hold repositories and kinds). */
async function dropFormerSets(redis: Redis, prefix: string): Promise<void> {
  await redis.del(`${prefix}active`, `${prefix}indexes-complete`);
  const escaped = prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
  for (const pattern of [`${escaped}by-repo:*`, `${escaped}by-source:*`]) {
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000);
      cursor = next;
      if (found.length > 0) await redis.del(...found);
    } while (cursor !== '0');
  }
}
