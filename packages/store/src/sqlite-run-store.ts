import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { parseRun, type RunRecord } from '@codefleet/core';
import type { RunStore, RunSummary } from './port.js';

const ddl = `
CREATE TABLE IF NOT EXISTS runs (
  run_id     TEXT PRIMARY KEY,
  updated_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  version    INTEGER NOT NULL,
  record     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at DESC);
`;

/** Run records in one SQLite file (WAL), shared by every worker process on the host. */
export class SqliteRunStore implements RunStore {
  readonly #db: Database.Database;

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.#db = new Database(path);
    this.#db.pragma('busy_timeout = 10000');
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    this.#db.transaction(() => this.#db.exec(ddl)).immediate();
  }

  async save(run: RunRecord): Promise<void> {
    const version = run.stages.length;
    // ISO timestamps of one format compare correctly as strings.
    this.#db.prepare(`INSERT INTO runs (run_id, updated_at, created_at, version, record) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (run_id) DO UPDATE SET updated_at = excluded.updated_at, version = excluded.version, record = excluded.record
      WHERE excluded.updated_at > runs.updated_at OR (excluded.updated_at = runs.updated_at AND excluded.version >= runs.version)`)
      .run(run.run_id, run.updated_at, run.created_at, version, JSON.stringify(run));
  }

  async get(runId: string): Promise<RunRecord | undefined> {
    const row = this.#db.prepare(`SELECT record FROM runs WHERE run_id = ?`).get(runId) as { record: string } | undefined;
    return row ? parseRun(JSON.parse(row.record)) : undefined;
  }

  async list(options: { limit?: number } = {}): Promise<RunSummary[]> {
    const rows = this.#db.prepare(`SELECT record FROM runs ORDER BY created_at DESC, run_id LIMIT ?`)
      .all(options.limit ?? 50) as { record: string }[];
    return rows.map(({ record }) => summarize(parseRun(JSON.parse(record))));
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}

/** The fields `codefleet runs` shows. */
export function summarize(run: RunRecord): RunSummary {
  return {
    runId: run.run_id,
    title: run.job.title,
    repo: run.job.repo,
    stage: run.stage,
    ...(run.outcome === undefined ? {} : { outcome: run.outcome }),
    attempts: run.attempts.length,
    ...(run.pull_request === undefined
      ? {}
      : { pullRequest: { number: run.pull_request.number, draft: run.pull_request.draft, ...(run.pull_request.url === undefined ? {} : { url: run.pull_request.url }) } }),
    createdAt: run.created_at,
    updatedAt: run.updated_at,
  };
}
