import type { SqliteDatabase as Database } from '@codefleet/sqlite';

/**
 * One table holds every named queue in the file. A job row moves
 * ready → leased → done | dead, and back to ready on retry, release, lease expiry or redrive.
 * `available_at` means "visible from" for ready rows and "lease expires at" for leased rows,
 * so one scan finds both new work and work whose claimer died. `repo` and
 * `requested_by` are copied out of the payload so concurrency limits are read without
 * parsing JSON (NULL for a malformed payload).
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
  repo            TEXT,
  requested_by    TEXT,
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
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (queue, state);
-- The longest-waiting job of each priority, which is all a claim compares (see local/slots.ts);
-- it replaced jobs_due (priority, then visible-from), which aging left unused.
CREATE INDEX IF NOT EXISTS jobs_waiting ON jobs (queue, priority, enqueued_at, seq)
  WHERE state IN ('ready', 'leased');
DROP INDEX IF EXISTS jobs_due;
-- Finished jobs by when they finished, for retention (trim) to find the oldest without a scan.
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (state, finished_at);
`;

/** Creates the schema, idempotently: openSqlite runs it on a new file before it appears, and at every open. */
export function prepareDatabase(db: Database): void {
  db.transaction(() => {
    db.exec(ddl);
    addLimitColumns(db);
  }).immediate();
}

/** A file written before concurrency limits: the columns are added and filled for the jobs still waiting or running. */
function addLimitColumns(db: Database): void {
  const columns = db.prepare(`SELECT name FROM pragma_table_info('jobs')`).all() as { name: string }[];
  if (columns.some((column) => column.name === 'repo')) return;
  db.exec(`ALTER TABLE jobs ADD COLUMN repo TEXT;
ALTER TABLE jobs ADD COLUMN requested_by TEXT;
UPDATE jobs SET ${limitColumnsFromPayload} WHERE state IN ('ready', 'leased');`);
}

/**
 * Fills `repo` and `requested_by` from the payload where a row lacks them (a file written
 * before they existed): NULL for a malformed payload, which then no limit holds.
 */
export const limitColumnsFromPayload = `repo = coalesce(repo, CASE WHEN json_valid(payload) THEN json_extract(payload, '$.repo') END),
  requested_by = coalesce(requested_by, CASE WHEN json_valid(payload) THEN json_extract(payload, '$.requested_by') END)`;
