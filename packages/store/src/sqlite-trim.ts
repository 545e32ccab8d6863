import type { SqliteDatabase } from '@codefleet/sqlite';
import { trimBatch, type TrimCounts, type TrimPolicy } from './port.js';

// Retention of the SQLite store (RunStore.trim). Every delete is one short write transaction
// of at most a batch of rows, found through an index, with a turn of the event loop between
// batches: the worker's jobs and the dashboard's reads go on while a year of history goes.

/** Lets timers and I/O run between two batches. */
const breathe = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs `step` (which deletes up to `batch` rows and says how many) until a batch comes back short. */
async function inBatches(batch: number, step: () => number): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = step();
    total += deleted;
    if (deleted < batch) return total;
    await breathe();
  }
}

/** Deletes what `policy` lets go from the store in `db` (see `RunStore.trim`). */
export async function trimSqliteStore(db: SqliteDatabase, policy: TrimPolicy, now: number): Promise<TrimCounts> {
  const batch = policy.batch ?? trimBatch;
  const runs = await trimRuns(db, policy, batch);
  const journal = policy.before === undefined ? 0 : await trimJournal(db, new Date(policy.before).toISOString(), batch);
  const expired = db.prepare(
    'DELETE FROM request_keys WHERE rowid IN (SELECT rowid FROM request_keys WHERE expires_at <= ? LIMIT ?)',
  );
  const requestKeys = await inBatches(batch, () => Number(expired.run(now, batch).changes));
  const rejections = policy.before === undefined ? 0 : await trimRejections(db, policy.before, batch);
  return { runs, journal, requestKeys, rejections };
}

/** Deletes rejected late writes recorded before `before` (epoch ms). */
function trimRejections(db: SqliteDatabase, before: number, batch: number): Promise<number> {
  const old = db.prepare(
    'DELETE FROM fence_rejections WHERE seq IN (SELECT seq FROM fence_rejections INDEXED BY fence_rejections_at WHERE at < ? LIMIT ?)',
  );
  return inBatches(batch, () => Number(old.run(before, batch).changes));
}

/** A run's place in the page order (created ms, then id). */
interface Place {
  ms: number;
  id: string;
}

/**
 * The newest run that may go, by the age bound or the count bound, whichever reaches newer:
 * every run up to it (in page order) goes unless active. Undefined: none may.
 */
function lastToGo(db: SqliteDatabase, policy: TrimPolicy): Place | undefined {
  const byAge =
    policy.before === undefined
      ? undefined
      : (db
          .prepare(
            'SELECT created_ms AS ms, run_id AS id FROM runs INDEXED BY runs_by_created WHERE created_ms < ? ORDER BY created_ms DESC, run_id DESC LIMIT 1',
          )
          .get(policy.before) as Place | undefined);
  const byCount =
    policy.keepRuns === undefined
      ? undefined
      : (db
          .prepare(
            'SELECT created_ms AS ms, run_id AS id FROM runs INDEXED BY runs_by_created ORDER BY created_ms DESC, run_id DESC LIMIT 1 OFFSET ?',
          )
          .get(policy.keepRuns) as Place | undefined);
  if (byAge === undefined || byCount === undefined) return byAge ?? byCount;
  return byAge.ms > byCount.ms || (byAge.ms === byCount.ms && byAge.id > byCount.id) ? byAge : byCount;
}

/** Deletes finished runs up to {@link lastToGo}, oldest first, walking on from the last batch's end. */
async function trimRuns(db: SqliteDatabase, policy: TrimPolicy, batch: number): Promise<number> {
  const last = lastToGo(db, policy);
  if (last === undefined) return 0;
  const next = db.prepare(
    `SELECT created_ms AS ms, run_id AS id, active FROM runs INDEXED BY runs_by_created
     WHERE (created_ms, run_id) > (?, ?) AND (created_ms, run_id) <= (?, ?) ORDER BY created_ms, run_id LIMIT ?`,
  );
  const remove = db.prepare('DELETE FROM runs WHERE run_id = ? AND active IS NOT 1');
  let from: Place = { ms: Number.MIN_SAFE_INTEGER, id: '' };
  let deleted = 0;
  for (;;) {
    const rows = next.all(from.ms, from.id, last.ms, last.id, batch) as (Place & { active: number | null })[];
    const end = rows[rows.length - 1];
    if (end === undefined) return deleted;
    // Active is read again by the delete itself: a run that went on meanwhile stays.
    deleted += db.transaction(() => rows.reduce((n, row) => n + Number(remove.run(row.id).changes), 0)).immediate();
    from = end;
    if (rows.length < batch) return deleted;
    await breathe();
  }
}

/**
 * Deletes journal entries written before `beforeIso`, each kind oldest (lowest seq) first:
 * within a kind, seq order is write order, so the entries to go are a prefix of it.
 */
async function trimJournal(db: SqliteDatabase, beforeIso: string, batch: number): Promise<number> {
  const oldest = db.prepare(
    `SELECT seq, json_extract(entry, '$.at') AS at FROM journal INDEXED BY journal_kind WHERE kind = ? ORDER BY seq LIMIT ?`,
  );
  const remove = db.prepare('DELETE FROM journal WHERE kind = ? AND seq <= ?');
  const kinds = db.prepare('SELECT DISTINCT kind FROM journal').all() as { kind: string }[];
  let deleted = 0;
  for (const { kind } of kinds) {
    for (;;) {
      const rows = oldest.all(kind, batch) as { seq: number; at: string | null }[];
      const young = rows.findIndex((row) => typeof row.at === 'string' && row.at >= beforeIso);
      const old = young === -1 ? rows : rows.slice(0, young);
      const end = old[old.length - 1];
      if (end !== undefined) deleted += Number(remove.run(kind, end.seq).changes);
      if (old.length < batch) break;
      await breathe();
    }
  }
  return deleted;
}
