import type { SqliteDatabase as Database } from '@codefleet/sqlite';

/**
 * One table holds every named queue in the file. A job row moves
 * ready → leased → done | dead, and back to ready on retry, release, lease expiry or redrive.
 * `available_at` means "visible from" for ready rows and "lease expires at" for leased rows,
 * so a single index scan finds both new work and work whose claimer died.
 */
const ddl = `
CREATE TABLE IF NOT EXISTS jobs (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  queue           TEXT    NOT NULL,
  id              TEXT    NOT NULL,
  idempotency_key TEXT,
  payload         TEXT    NOT NULL,
  state           TEXT    NOT NULL CHECK (state IN ('ready', 'leased', 'done', 'dead')),
  priority        INTEGER NOT NULL DEFAULT 1,
  attempts        INTEGER NOT NULL DEFAULT 0,
  max_attempts    INTEGER NOT NULL,
  available_at    INTEGER NOT NULL,
  lease_token     TEXT,
  leased_by       TEXT,
  last_error      TEXT,
  dead_reason     TEXT,
  enqueued_at     INTEGER NOT NULL,
  finished_at     INTEGER,
  UNIQUE (queue, id)
);
-- Dedup while pending or running, enforced by SQLite itself rather than by a read-then-write.
CREATE UNIQUE INDEX IF NOT EXISTS jobs_active_key ON jobs (queue, idempotency_key)
  WHERE state IN ('ready', 'leased');
CREATE INDEX IF NOT EXISTS jobs_due ON jobs (queue, priority DESC, available_at)
  WHERE state IN ('ready', 'leased');
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (queue, state);
`;

/** Creates the schema, idempotently: openSqlite runs it on a new file before it appears, and at every open. */
export function prepareDatabase(db: Database): void {
  db.transaction(() => db.exec(ddl)).immediate();
}

/** Jobs run in priority order; SQLite sorts integers, the job model speaks words. */
export const priorityRank = { low: 0, normal: 1, high: 2 } as const;
