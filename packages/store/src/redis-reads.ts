import type { Redis } from 'ioredis';
import type { JournalEntry, JournalQuery, RunQuery, RunSummary } from './port.js';
import {
  checkJournalQuery,
  checkQuery,
  facetsOfStored,
  matchesFacets,
  scanLimit,
  summarizeStored,
  type CheckedQuery,
  type RunFacets,
} from './query.js';

// The Redis store's filtered reads, apart from its writes.
//
// Runs: `save` keeps, besides the record, a small `facets` field (stage, outcome, repo,
// source, agent) and four sorted sets scored by created_at: every run, runs of a repo,
// runs of a source kind, and active runs (added while not finished, removed when it is).
// A source name has no index (it is not a kind: `ci-follow-up` spans three, `redrive` all):
// it is matched on the facets while walking the other filters' index.
// A query walks the most selective of them newest first, within since..until as a score
// range, reading only the facets of each candidate, in chunks, until `limit` match.
// Trade-off: a query whose remaining filters (agent, an outcome, a stage) match rarely
// stops after examining `scanLimit` candidates and may return fewer than exist further
// back; the alternative, an index per filter value kept in step with every stage change,
// costs every save more commands at fleet scale for a page an operator reads now and then.
// A store written before these indexes existed (no `indexes-complete` key) is walked by
// the index of every run instead, reading facets from the records that have none: the
// same answers, within the same bound.

export { scanLimit };
const chunk = 200;

/** Key names of the run indexes, under the store's prefix. */
export function runIndexes(prefix: string): {
  all: string;
  active: string;
  complete: string;
  repo(repo: string): string;
  source(kind: string): string;
} {
  return {
    all: `${prefix}by-created`,
    active: `${prefix}active`,
    complete: `${prefix}indexes-complete`,
    repo: (repo) => `${prefix}by-repo:${repo}`,
    source: (kind) => `${prefix}by-source:${kind}`,
  };
}

export async function listRuns(redis: Redis, prefix: string, query: RunQuery | undefined): Promise<RunSummary[]> {
  const q = checkQuery(query);
  const indexes = runIndexes(prefix);
  const index = (await redis.exists(indexes.complete)) === 1 ? selective(indexes, q) : indexes.all;
  const filtered = q.state !== undefined || q.repo !== undefined || q.source !== undefined || q.agent !== undefined;
  const max = q.untilMs ?? '+inf';
  const min = q.sinceMs ?? '-inf';
  const runKey = (id: string) => `${prefix}run:${id}`;
  const records: { id: string; record: string }[] = [];
  for (let offset = 0; records.length < q.limit && offset < scanLimit; offset += chunk) {
    const ids = await redis.zrevrangebyscore(index, max, min, 'LIMIT', offset, chunk);
    if (ids.length === 0) break;
    // Unfiltered, the records are what we read anyway; filtered, only the facets, then the
    // records of the matches.
    const fields =
      (await redis.pipeline(ids.map((id) => ['hmget', runKey(id), filtered ? 'facets' : 'record'])).exec()) ?? [];
    const matched: string[] = [];
    for (const [i, id] of ids.entries()) {
      const value = (fields[i]?.[1] as (string | null)[] | undefined)?.[0] ?? null;
      if (!filtered) {
        if (value !== null) records.push({ id, record: value });
        continue;
      }
      // A record saved before facets (or before their source name) existed: read them from the record.
      const saved = value === null ? undefined : parseFacets(value);
      const facets = saved?.kind !== undefined ? saved : await legacyFacets(redis, id, runKey(id), value);
      if (facets !== undefined && matchesFacets(facets, q)) matched.push(id);
    }
    if (matched.length > 0) {
      const found = (await redis.pipeline(matched.map((id) => ['hget', runKey(id), 'record'])).exec()) ?? [];
      for (const [i, [, value]] of found.entries())
        if (typeof value === 'string') records.push({ id: matched[i] ?? '', record: value });
    }
  }
  return records.slice(0, q.limit).map(({ id, record }) => summarizeStored(id, record));
}

/** The most selective index that holds every run the query can match. */
function selective(indexes: ReturnType<typeof runIndexes>, q: CheckedQuery): string {
  if (q.state !== undefined && 'active' in q.state) return indexes.active;
  if (q.repo !== undefined) return indexes.repo(q.repo);
  if (q.source !== undefined && 'kind' in q.source) return indexes.source(q.source.kind);
  return indexes.all;
}

/** Facets that cannot be read match no filter: the run is still listed, flagged, when nothing is filtered. */
function parseFacets(text: string): RunFacets | undefined {
  try {
    return JSON.parse(text) as RunFacets;
  } catch {
    return undefined;
  }
}

/** Facets that cannot be read stay unreadable; missing or old ones are read from the record. */
async function legacyFacets(
  redis: Redis,
  id: string,
  key: string,
  saved: string | null,
): Promise<RunFacets | undefined> {
  if (saved !== null && parseFacets(saved) === undefined) return undefined;
  const record = await redis.hget(key, 'record');
  return record === null ? undefined : facetsOfStored(id, record);
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
    for (let offset = 0; taken < q.limit; offset += chunk) {
      const lines = await redis.lrange(keys.kind(kind), offset, offset + chunk - 1);
      for (const line of lines) {
        const space = line.indexOf(' ');
        const entry = JSON.parse(line.slice(space + 1)) as JournalEntry;
        if (q.runId !== undefined && entry.runId !== q.runId) continue;
        if (taken < q.limit) found.push({ seq: Number(line.slice(0, space)), entry });
        taken += 1;
      }
      if (lines.length < chunk) break;
    }
  }
  return found
    .sort((a, b) => b.seq - a.seq)
    .slice(0, q.limit)
    .map(({ entry }) => entry);
}
