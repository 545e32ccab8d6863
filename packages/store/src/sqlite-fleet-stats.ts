import type { RunRecord } from '@codefleet/core';
import type { SqliteDatabase } from '@codefleet/sqlite';
import {
  daysOf,
  finishedFields,
  spendFields,
  statsDays,
  statsOf,
  type FleetStats,
  type SpendBy,
} from './fleet-stats.js';

// The fleet's day totals on SQLite (fleet-stats.ts): one row per day and field, so a range
// is a walk of the primary key over its days. `finished_runs` remembers which runs were
// counted, so a run saved finished again (a late duplicate write, a worker's last save
// after the pipeline's) counts once; rows older than the totals are kept go by the hour.

export const statsDdl = `
CREATE TABLE IF NOT EXISTS day_stats (
  day   TEXT NOT NULL,
  field TEXT NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (day, field)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS finished_runs (
  run_id TEXT PRIMARY KEY,
  at     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS finished_runs_at ON finished_runs (at);
`;

const addSql = `INSERT INTO day_stats (day, field, value) VALUES (?, ?, ?)
  ON CONFLICT (day, field) DO UPDATE SET value = day_stats.value + excluded.value`;

/** Adds `value` to each of `fields` of `day`; call inside a write transaction. */
function addToDay(db: SqliteDatabase, day: string, fields: string[], value: number): void {
  if (fields.length === 0) return;
  const add = db.prepare(addSql);
  for (const field of fields) add.run(day, field, value);
}

/** Adds an amount of spend to the fields of who spent it; inside addSpend's transaction. */
export function addSpendBy(db: SqliteDatabase, day: string, usd: number, by: SpendBy | undefined): void {
  addToDay(db, day, spendFields(by), usd);
}

/**
 * Counts `run` in its day's totals when it is finished and not counted yet, in one write
 * transaction; every hour at most (per process, `prune` true) drops days past keeping.
 */
export function recordFinished(db: SqliteDatabase, run: RunRecord, now: number, prune: boolean): void {
  const finished = finishedFields(run, now);
  if (finished === undefined && !prune) return;
  db.transaction(() => {
    if (finished !== undefined) {
      const first = db
        .prepare('INSERT INTO finished_runs (run_id, at) VALUES (?, ?) ON CONFLICT (run_id) DO NOTHING')
        .run(run.run_id, finished.at);
      if (Number(first.changes) === 1) addToDay(db, finished.day, finished.fields, 1);
    }
    if (prune) {
      const cutoff = now - statsDays * 86_400_000;
      db.prepare('DELETE FROM finished_runs WHERE at < ?').run(cutoff);
      db.prepare('DELETE FROM day_stats WHERE day < ?').run(new Date(cutoff).toISOString().slice(0, 10));
    }
  }).immediate();
}

/** The totals of a range of days (see `FleetStatsReader`). */
export function readFleetStats(db: SqliteDatabase, range: { from: string; to: string; top?: number }): FleetStats {
  const days = daysOf(range);
  const first = days[0]!;
  const last = days[days.length - 1]!;
  const spent = new Map(
    (
      db.prepare('SELECT day, usd FROM spend WHERE day >= ? AND day <= ?').all(first, last) as {
        day: string;
        usd: number;
      }[]
    ).map((row) => [row.day, row.usd]),
  );
  const fields = new Map<string, Record<string, number>>(days.map((day) => [day, {}]));
  const rows = db.prepare('SELECT day, field, value FROM day_stats WHERE day >= ? AND day <= ?').all(first, last) as {
    day: string;
    field: string;
    value: number;
  }[];
  for (const row of rows) {
    const of = fields.get(row.day);
    if (of !== undefined) of[row.field] = row.value;
  }
  return statsOf(
    days.map((day) => ({ day, spentUsd: spent.get(day) ?? 0, fields: fields.get(day) ?? {} })),
    range.top,
  );
}
