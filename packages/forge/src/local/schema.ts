import type { SqliteDatabase as Database } from '@codefleet/sqlite';

/**
 * Pull requests, comments and labels of the local forge. Rows are never deleted, so the
 * number of pull request rows per (repo, head) is the number of creations.
 */
const ddl = `
CREATE TABLE IF NOT EXISTS pull_requests (
  repo        TEXT    NOT NULL,
  number      INTEGER NOT NULL,
  title       TEXT    NOT NULL,
  body        TEXT    NOT NULL,
  head        TEXT    NOT NULL,
  base        TEXT    NOT NULL,
  state       TEXT    NOT NULL CHECK (state IN ('open', 'closed', 'merged')),
  draft       INTEGER NOT NULL CHECK (draft IN (0, 1)),
  head_sha    TEXT,
  created_at  TEXT    NOT NULL,
  updated_at  TEXT    NOT NULL,
  PRIMARY KEY (repo, number)
);
-- At most one open pull request per head, enforced by SQLite rather than by a read-then-write.
CREATE UNIQUE INDEX IF NOT EXISTS pull_requests_open_head ON pull_requests (repo, head) WHERE state = 'open';
CREATE INDEX IF NOT EXISTS pull_requests_head ON pull_requests (repo, head, created_at);

CREATE TABLE IF NOT EXISTS comments (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  repo        TEXT    NOT NULL,
  target      TEXT    NOT NULL,
  marker      TEXT,
  body        TEXT    NOT NULL,
  created_at  TEXT    NOT NULL,
  updated_at  TEXT    NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS comments_marker ON comments (repo, target, marker) WHERE marker IS NOT NULL;
CREATE INDEX IF NOT EXISTS comments_target ON comments (repo, target, id);

CREATE TABLE IF NOT EXISTS labels (
  repo        TEXT    NOT NULL,
  target      TEXT    NOT NULL,
  name        TEXT    NOT NULL COLLATE NOCASE,
  PRIMARY KEY (repo, target, name)
);
`;

/** Creates the schema (openSqlite has set the file up for several processes). */
export function prepareDatabase(db: Database): void {
  db.transaction(() => db.exec(ddl)).immediate();
}
