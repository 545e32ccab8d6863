import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { describeDamage, openSqlite, type SqliteDamage, type SqliteDatabase } from '@codefleet/sqlite';
import { CodefleetError, type RunRecord } from '@codefleet/core';
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
import { boundEntry, boundWorker, checkJournalQuery, checkQuery, journalLimit, readStored } from './query.js';
import { checkSpend } from './spend.js';
import { formerRequestKey } from './request-key.js';
import { prepareRunIndex, repairStale, runsTable, runWriter } from './sqlite-run-index.js';
import { chooseIndex, countRuns, readPage } from './sqlite-run-reads.js';
import { memoizedSummaries } from './summary-memo.js';
import { trimSqliteStore } from './sqlite-trim.js';
import { addSpendBy, readFleetStats, recordFinished, statsDdl } from './sqlite-fleet-stats.js';
import type { FleetStats, SpendBy } from './fleet-stats.js';

const ddl = `
CREATE TABLE IF NOT EXISTS task_leases (
  task_key   TEXT PRIMARY KEY,
  token      TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS fence_rejections (
  seq      INTEGER PRIMARY KEY AUTOINCREMENT,
  task_key TEXT NOT NULL,
  run_id   TEXT NOT NULL,
  token    TEXT NOT NULL,
  action   TEXT NOT NULL,
  at       INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS fence_rejections_task ON fence_rejections (task_key, seq);
-- For retention to find the old ones without a scan.
CREATE INDEX IF NOT EXISTS fence_rejections_at ON fence_rejections (at);
CREATE TABLE IF NOT EXISTS request_keys (
  key        TEXT PRIMARY KEY,
  value      TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS request_keys_expiry ON request_keys (expires_at);
CREATE TABLE IF NOT EXISTS cancel_requests (
  task_key TEXT PRIMARY KEY,
  by       TEXT NOT NULL,
  at       INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS workers (
  id         TEXT PRIMARY KEY,
  info       TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS journal (
  seq    INTEGER PRIMARY KEY AUTOINCREMENT,
  kind   TEXT NOT NULL,
  run_id TEXT,
  entry  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_run ON journal (run_id, seq);
CREATE INDEX IF NOT EXISTS journal_kind ON journal (kind, seq);
CREATE TABLE IF NOT EXISTS spend (
  day TEXT PRIMARY KEY,
  usd REAL NOT NULL
);
`;

// A store file made before the workers and journal tables existed gets them on open
// (openSqlite runs `create` on every writable open; every statement is IF NOT EXISTS), and
// one made before the run facet columns is migrated then (sqlite-run-index.ts).

function storeDamaged(damage: SqliteDamage): CodefleetError {
  const what = describeDamage(damage);
  const fix =
    damage.kind === 'corrupt'
      ? `stop the workers, then \`sqlite3 ${damage.path} .recover | sqlite3 ${damage.path}.recovered\` and put the recovered file in its place, or restore it from a backup`
      : `stop the workers; restore ${damage.path} from a backup, or move it and its -wal and -shm files aside to start an empty run store (past runs are then forgotten)`;
  return new CodefleetError('store_unavailable', `the run store ${what}; fix: ${fix}`, {
    verdict: 'permanent',
    cause: damage.cause,
    details: { path: damage.path, damage: damage.kind, what, fix },
  });
}

/** Run records in one SQLite file (WAL), shared by every worker process on the host. */
export class SqliteRunStore implements RunStore {
  readonly #db: SqliteDatabase;
  readonly #saveRun: (run: RunRecord) => void;
  #nextRequestSweep = 0;
  #nextStatsPrune = 0;
  readonly #journalLimit: number;
  /** Summaries of the records pages read lately (summary-memo.ts). */
  readonly #summarize = memoizedSummaries();

  /**
   * `journalLimit` (default {@link journalLimit}) is there for tests of the bound;
   * `onIndexMigration` hears when a file from before the run indexes is migrated at open.
   */
  constructor(
    path: string,
    options: { journalLimit?: number; onIndexMigration?: (event: RunIndexEvent) => void } = {},
  ) {
    this.#journalLimit = options.journalLimit ?? journalLimit;
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    // A damaged file (truncated to 0 bytes, overwritten, not ours) is refused with its path
    // and the fix, never read as an empty store: finished runs would look unstarted.
    this.#db = openSqlite(path, {
      schema: {
        table: 'runs',
        create: (db) => {
          db.transaction(() => db.exec(runsTable + ddl + statsDdl)).immediate();
          prepareRunIndex(db, options.onIndexMigration);
        },
      },
      damaged: storeDamaged,
    });
    this.#saveRun = runWriter(this.#db);
  }

  async save(run: RunRecord): Promise<void> {
    this.#saveRun(run);
    const now = Date.now();
    const prune = now >= this.#nextStatsPrune;
    if (prune) this.#nextStatsPrune = now + 3_600_000;
    recordFinished(this.#db, run, now, prune);
  }

  async fleetStats(range: { from: string; to: string; top?: number }): Promise<FleetStats> {
    return readFleetStats(this.#db, range);
  }

  async acquire(taskKey: string, token: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    // Upsert that only replaces an expired lease or our own, in one statement.
    const result = this.#db
      .prepare(
        `INSERT INTO task_leases (task_key, token, expires_at) VALUES (?, ?, ?)
      ON CONFLICT (task_key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
      WHERE task_leases.expires_at <= ? OR task_leases.token = excluded.token`,
      )
      .run(taskKey, token, now + ttlMs, now);
    return result.changes === 1;
  }

  async renew(taskKey: string, token: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    return (
      this.#db
        .prepare(`UPDATE task_leases SET expires_at = ? WHERE task_key = ? AND token = ? AND expires_at > ?`)
        .run(now + ttlMs, taskKey, token, now).changes === 1
    );
  }

  async fence(taskKey: string, token: string, action: string, runId: string): Promise<boolean> {
    const now = Date.now();
    return this.#db
      .transaction(() => {
        const owned =
          this.#db
            .prepare(`SELECT 1 FROM task_leases WHERE task_key = ? AND token = ? AND expires_at > ?`)
            .get(taskKey, token, now) !== undefined;
        if (!owned) {
          this.#db
            .prepare(`INSERT INTO fence_rejections (task_key, run_id, token, action, at) VALUES (?, ?, ?, ?, ?)`)
            .run(taskKey, runId, token, action, now);
        }
        return owned;
      })
      .immediate();
  }

  async release(taskKey: string, token: string): Promise<void> {
    this.#db.prepare(`DELETE FROM task_leases WHERE task_key = ? AND token = ?`).run(taskKey, token);
  }

  async handOver(
    from: { taskKey: string; token: string },
    to: { taskKey: string; token: string },
    ttlMs: number,
  ): Promise<boolean> {
    // No round trip to save here; only the order matters, not atomicity.
    await this.release(from.taskKey, from.token);
    return this.acquire(to.taskKey, to.token, ttlMs);
  }

  async rejections(taskKey: string): Promise<FenceRejection[]> {
    const rows = this.#db
      .prepare(`SELECT task_key, run_id, token, action, at FROM fence_rejections WHERE task_key = ? ORDER BY seq`)
      .all(taskKey) as { task_key: string; run_id: string; token: string; action: string; at: number }[];
    return rows.map((r) => ({ taskKey: r.task_key, runId: r.run_id, token: r.token, action: r.action, at: r.at }));
  }

  async get(runId: string): Promise<RunRecord | undefined> {
    const row = this.#db.prepare(`SELECT record FROM runs WHERE run_id = ?`).get(runId) as
      { record: string } | undefined;
    return row ? readStored(runId, row.record) : undefined;
  }

  async list(query?: RunQuery): Promise<RunSummary[]> {
    const q = checkQuery(query);
    repairStale(this.#db);
    return readPage(this.#db, q, this.#summarize, chooseIndex(this.#db, q)).runs;
  }

  async page(query?: RunQuery): Promise<RunPage> {
    const q = checkQuery(query);
    repairStale(this.#db);
    const index = chooseIndex(this.#db, q);
    return { ...readPage(this.#db, q, this.#summarize, index), total: countRuns(this.#db, q, index) };
  }

  async trim(policy: TrimPolicy): Promise<TrimCounts> {
    return trimSqliteStore(this.#db, policy, Date.now());
  }

  async heartbeatWorker(worker: WorkerInfo, ttlMs: number): Promise<void> {
    const now = Date.now();
    // Expired entries are dropped here, so the table holds about the live fleet.
    this.#db
      .transaction(() => {
        this.#db.prepare(`DELETE FROM workers WHERE expires_at <= ?`).run(now);
        this.#db
          .prepare(
            `INSERT INTO workers (id, info, expires_at) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET info = excluded.info, expires_at = excluded.expires_at`,
          )
          .run(worker.id, JSON.stringify(boundWorker(worker)), now + ttlMs);
      })
      .immediate();
  }

  async removeWorker(workerId: string): Promise<void> {
    this.#db.prepare(`DELETE FROM workers WHERE id = ?`).run(workerId);
  }

  async listWorkers(): Promise<WorkerInfo[]> {
    const rows = this.#db.prepare(`SELECT info FROM workers WHERE expires_at > ? ORDER BY id`).all(Date.now()) as {
      info: string;
    }[];
    return rows.map(({ info }) => JSON.parse(info) as WorkerInfo);
  }

  async record(entry: JournalEntry): Promise<void> {
    const bounded = boundEntry(entry);
    this.#db
      .transaction(() => {
        this.#db
          .prepare(`INSERT INTO journal (kind, run_id, entry) VALUES (?, ?, ?)`)
          .run(bounded.kind, bounded.runId ?? null, JSON.stringify(bounded));
        // The newest `journalLimit` of this kind stay; the (kind, seq) index makes this a short walk.
        this.#db
          .prepare(
            `DELETE FROM journal WHERE kind = ? AND seq <= (SELECT seq FROM journal WHERE kind = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
          )
          .run(bounded.kind, bounded.kind, this.#journalLimit);
      })
      .immediate();
  }

  async journal(query?: JournalQuery): Promise<JournalEntry[]> {
    const q = checkJournalQuery(query);
    const where: string[] = [];
    const args: string[] = [];
    if (q.runId !== undefined) {
      where.push('run_id = ?');
      args.push(q.runId);
    }
    if (q.kind !== undefined) {
      where.push('kind = ?');
      args.push(q.kind);
    }
    const rows = this.#db
      .prepare(
        `SELECT entry FROM journal ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`} ORDER BY seq DESC LIMIT ?`,
      )
      .all(...args, q.limit) as { entry: string }[];
    return rows.map(({ entry }) => JSON.parse(entry) as JournalEntry);
  }

  async addSpend(day: string, usd: number, by?: SpendBy): Promise<number> {
    checkSpend(day, usd);
    // One immediate transaction: another process's add lands before or after, never between.
    return this.#db
      .transaction(() => {
        this.#db
          .prepare(
            `INSERT INTO spend (day, usd) VALUES (?, ?) ON CONFLICT (day) DO UPDATE SET usd = spend.usd + excluded.usd`,
          )
          .run(day, usd);
        addSpendBy(this.#db, day, usd, by);
        return (this.#db.prepare(`SELECT usd FROM spend WHERE day = ?`).get(day) as { usd: number }).usd;
      })
      .immediate();
  }

  async spentOn(day: string): Promise<number> {
    checkSpend(day);
    const row = this.#db.prepare(`SELECT usd FROM spend WHERE day = ?`).get(day) as { usd: number } | undefined;
    return row?.usd ?? 0;
  }

  async requestCancel(taskKey: string, by: string): Promise<void> {
    this.#db
      .prepare(
        `INSERT INTO cancel_requests (task_key, by, at) VALUES (?, ?, ?) ON CONFLICT (task_key) DO UPDATE SET by = excluded.by, at = excluded.at`,
      )
      .run(taskKey, by, Date.now());
  }

  async cancelRequested(taskKey: string): Promise<{ by: string; at: number } | undefined> {
    return this.#db.prepare(`SELECT by, at FROM cancel_requests WHERE task_key = ?`).get(taskKey) as
      { by: string; at: number } | undefined;
  }

  async clearCancel(taskKey: string): Promise<void> {
    this.#db.prepare(`DELETE FROM cancel_requests WHERE task_key = ?`).run(taskKey);
  }

  async bindRequest(key: string, value: string, ttlMs: number): Promise<{ value: string; bound: boolean }> {
    checkRequestKey(key, value);
    this.#sweepExpiredRequests();
    const former = formerRequestKey(key);
    // One transaction: a live binding (under the key or its former spelling) is kept and
    // read back; otherwise the key is bound, an expired binding replaced.
    return this.#db
      .transaction(() => {
        const held = this.#liveRequest(key) ?? (former === undefined ? undefined : this.#liveRequest(former));
        if (held !== undefined) return { value: held, bound: false };
        this.#upsertRequest(key, value, ttlMs);
        return { value, bound: true };
      })
      .immediate();
  }

  async setRequest(key: string, value: string, ttlMs: number): Promise<void> {
    checkRequestKey(key, value);
    this.#sweepExpiredRequests();
    const former = formerRequestKey(key);
    this.#db
      .transaction(() => {
        this.#upsertRequest(key, value, ttlMs);
        if (former !== undefined) this.#db.prepare(`DELETE FROM request_keys WHERE key = ?`).run(former);
      })
      .immediate();
  }

  async lookupRequest(key: string): Promise<string | undefined> {
    const former = formerRequestKey(key);
    return this.#liveRequest(key) ?? (former === undefined ? undefined : this.#liveRequest(former));
  }

  async releaseRequest(key: string): Promise<void> {
    const former = formerRequestKey(key);
    this.#db.prepare(`DELETE FROM request_keys WHERE key IN (?, ?)`).run(key, former ?? key);
  }

  #liveRequest(key: string): string | undefined {
    const row = this.#db
      .prepare(`SELECT value FROM request_keys WHERE key = ? AND expires_at > ?`)
      .get(key, Date.now()) as { value: string } | undefined;
    return row?.value;
  }

  #upsertRequest(key: string, value: string, ttlMs: number): void {
    this.#db
      .prepare(
        `INSERT INTO request_keys (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`,
      )
      .run(key, value, Date.now() + ttlMs);
  }

  /**
   * Deletes expired request keys, at most once a minute: Redis drops them by their TTL, and
   * without this every chat message and API request would stay in the file for good.
   */
  #sweepExpiredRequests(): void {
    const now = Date.now();
    if (now < this.#nextRequestSweep) return;
    this.#nextRequestSweep = now + 60_000;
    this.#db.prepare(`DELETE FROM request_keys WHERE expires_at <= ?`).run(now);
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}

/** Request keys and values are bounded (see `RequestKeys`); a caller passing more has a bug. */
export function checkRequestKey(key: string, value: string): void {
  if (key.length === 0 || key.length > 512 || value.length > 4_096) {
    throw new CodefleetError(
      'payload_too_large',
      `request key must be 1..512 characters and its value at most 4096 (got ${key.length} and ${value.length})`,
      { verdict: 'permanent' },
    );
  }
}
