import type { RunRecord } from '@codefleet/core';
import type { SqliteDatabase } from '@codefleet/sqlite';
import type { RunIndexEvent } from './port.js';
import { createdMsOf, facetsOf, facetsOfStored, type RunFacets } from './query.js';
import { runVersion } from './version.js';

// The runs table keeps, beside each record, the fields pages filter and sort on (its facets,
// query.ts) as columns, written by the same statement as the record; an index per filter, and
// per repository and state together, each ending in the page order, makes any page a short
// walk of one index (sqlite-run-reads.ts).
//
// `facets_version` is the record version the facets were computed from. A writer from before
// the columns (a worker still running the previous version) updates the record and leaves
// them as they were: the row then differs from its version, the partial index `runs_stale`
// holds it, and the next open or read recomputes it. Files made before the columns get them
// at open (schema version 2, `PRAGMA user_version`), backfilled in batches.

/** The runs table; columns a file made before them lacks are added at open. */
export const runsTable = `
CREATE TABLE IF NOT EXISTS runs (
  run_id         TEXT PRIMARY KEY,
  updated_at     TEXT NOT NULL,
  created_at     TEXT NOT NULL,
  version        TEXT NOT NULL,
  created_ms     INTEGER NOT NULL DEFAULT 0,
  stage          TEXT,
  active         INTEGER,
  outcome        TEXT,
  repo           TEXT,
  source_name    TEXT,
  source_kind    TEXT,
  agent          TEXT,
  facets_version TEXT,
  record         TEXT NOT NULL
);
`;

/** The facet columns, as `facetValues` fills them. */
const facetColumns = ['created_ms', 'stage', 'active', 'outcome', 'repo', 'source_name', 'source_kind', 'agent'];

const columnTypes: Record<string, string> = { created_ms: 'INTEGER NOT NULL DEFAULT 0', active: 'INTEGER' };

/**
 * The indexes pages are read through (see `planOf`): the facet columns each starts with, then
 * the page order. A filter the walked index does not hold is checked in its own index.
 */
export const runIndexes = {
  runs_by_created: [],
  runs_by_active: ['active'],
  runs_by_stage: ['stage'],
  runs_by_outcome: ['outcome'],
  runs_by_repo: ['repo'],
  runs_by_repo_active: ['repo', 'active'],
  runs_by_repo_stage: ['repo', 'stage'],
  runs_by_repo_outcome: ['repo', 'outcome'],
  runs_by_source: ['source_name'],
  runs_by_kind: ['source_kind'],
  runs_by_agent: ['agent'],
} as const satisfies Record<string, readonly string[]>;

/** The name of one of {@link runIndexes}. */
export type RunIndex = keyof typeof runIndexes;

const indexDdl = [
  ...Object.entries(runIndexes).map(
    ([name, columns]) =>
      `CREATE INDEX IF NOT EXISTS ${name} ON runs (${[...columns, 'created_ms DESC', 'run_id DESC'].join(', ')});`,
  ),
  'CREATE INDEX IF NOT EXISTS runs_stale ON runs (run_id) WHERE facets_version IS NOT version;',
].join('\n');

/** The schema version of a run store file whose runs carry their facets as columns. */
const schemaVersion = 2;

/** Rows recomputed per write transaction: short, so other processes' writes go on in between. */
const batch = 500;

/** Column values of `facets` (none for a record that cannot be read), in `facetColumns` order. */
function facetValues(facets: RunFacets | undefined, createdAt: string): (string | number | null)[] {
  if (facets === undefined) return [createdMsOf(createdAt), null, null, null, null, null, null, null];
  return [
    facets.createdMs,
    facets.stage,
    facets.active ? 1 : 0,
    facets.outcome ?? null,
    facets.repo,
    facets.source,
    facets.kind,
    facets.agent ?? null,
  ];
}

const saveSql = `INSERT INTO runs (run_id, updated_at, created_at, version, record, ${facetColumns.join(', ')}, facets_version)
  VALUES (${Array.from({ length: 6 + facetColumns.length }, () => '?').join(', ')})
  ON CONFLICT (run_id) DO UPDATE SET ${['updated_at', 'version', 'record', ...facetColumns, 'facets_version']
    .map((column) => `${column} = excluded.${column}`)
    .join(', ')}
  WHERE excluded.version >= runs.version`;

/**
 * The save of a run on `db`: an upsert that keeps the stored record when its version is newer
 * (the port's promise: runVersion() is a fixed-width string that orders as versions do), the
 * facets in the same statement. Prepared once: it is the worker's most frequent write.
 */
export function runWriter(db: SqliteDatabase): (run: RunRecord) => void {
  const statement = db.prepare(saveSql);
  return (run) => {
    const version = runVersion(run);
    statement.run(
      run.run_id,
      run.updated_at,
      run.created_at,
      version,
      JSON.stringify(run),
      ...facetValues(facetsOf(run), run.created_at),
      version,
    );
  };
}

/**
 * Brings the runs table's facets up to date at open: a file from before them is migrated
 * once (columns added, every row backfilled, indexes built; `report` hears when it starts and
 * ends), then rows an older writer left stale are recomputed.
 */
export function prepareRunIndex(db: SqliteDatabase, report?: (event: RunIndexEvent) => void): void {
  const version = (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
  if (version < schemaVersion) migrate(db, report);
  repairStale(db);
}

function migrate(db: SqliteDatabase, report?: (event: RunIndexEvent) => void): void {
  const started = performance.now();
  db.transaction(() => {
    const present = new Set(
      (db.prepare('PRAGMA table_info(runs)').all() as { name: string }[]).map((column) => column.name),
    );
    for (const column of [...facetColumns, 'facets_version'])
      if (!present.has(column)) db.exec(`ALTER TABLE runs ADD COLUMN ${column} ${columnTypes[column] ?? 'TEXT'}`);
    // The created_at index of schema 1: pages now go by created_ms.
    db.exec('DROP INDEX IF EXISTS runs_created');
  }).immediate();
  const pending = db.prepare('SELECT EXISTS (SELECT 1 FROM runs WHERE facets_version IS NOT version) AS n').get() as {
    n: number;
  };
  if (pending.n === 1) report?.({ event: 'started', store: 'sqlite', schema: schemaVersion });
  // Rows in rowid order, so each batch starts where the last ended; the indexes are built
  // after, from the filled columns, which is quicker than keeping them up to date row by row.
  let after = -1;
  let runs = 0;
  for (;;) {
    const done = recompute(db, 'rowid > ? AND facets_version IS NOT version ORDER BY rowid', [after]);
    if (done.last === undefined) break;
    runs += done.count;
    after = done.last;
  }
  db.transaction(() => {
    db.exec(indexDdl);
    db.exec(`PRAGMA user_version = ${schemaVersion}`);
  }).immediate();
  if (pending.n === 1)
    report?.({
      event: 'finished',
      store: 'sqlite',
      schema: schemaVersion,
      runs,
      durationMs: Math.round(performance.now() - started),
    });
}

/**
 * Recomputes the facets of rows an older writer left stale, through the `runs_stale` index:
 * none, normally, at the cost of one index probe.
 */
export function repairStale(db: SqliteDatabase): void {
  const probe = db.prepare('SELECT run_id FROM runs WHERE facets_version IS NOT version LIMIT 1');
  while (probe.get() !== undefined) recompute(db, 'facets_version IS NOT version', []);
}

/** Recomputes the facets of up to one batch of rows matching `where`, in one write transaction. */
function recompute(db: SqliteDatabase, where: string, args: number[]): { count: number; last?: number } {
  return db
    .transaction(() => {
      const rows = db
        .prepare(`SELECT rowid AS id, run_id, created_at, record FROM runs WHERE ${where} LIMIT ${batch}`)
        .all(...args) as { id: number; run_id: string; created_at: string; record: string }[];
      const update = db.prepare(
        `UPDATE runs SET ${facetColumns.map((column) => `${column} = ?`).join(', ')}, facets_version = version WHERE rowid = ?`,
      );
      for (const row of rows)
        update.run(...facetValues(facetsOfStored(row.run_id, row.record), row.created_at), row.id);
      return { count: rows.length, ...(rows.length === 0 ? {} : { last: rows[rows.length - 1]?.id }) };
    })
    .immediate();
}
