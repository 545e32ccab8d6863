import { isTerminal, type Stage } from '@codefleet/core';
import type { SqliteDatabase } from '@codefleet/sqlite';
import type { RunSummary } from './port.js';
import { writeCursor } from './page-cursor.js';
import type { CheckedQuery } from './query.js';
import { runIndexes, type RunIndex } from './sqlite-run-index.js';

// A page is one walk down one index (sqlite-run-index.ts), newest first, stopping at the limit.
// The index is chosen here, not by SQLite's planner: without statistics it cannot know that
// active runs are a handful among 100,000 or that a repository holds fewer runs than a state,
// and a wrong guess walks all of them. A filter the walked index does not hold is checked by a
// probe of its own index at the run's (created_ms, run_id), as the Redis store checks the
// other sets: the row is read only for runs that pass (SQLite defers the seek), and a count
// reads index entries alone. Reading the column from the row instead cost 10 times as much:
// the row is the 4 KB record, and a migrated table holds the facet columns after it.

/** SQL for one read: the index it goes through, its WHERE terms and their values. */
export interface RunsSql {
  index: RunIndex;
  where: string[];
  args: (string | number)[];
}

/** One equality filter of a query: its column, its value, the index that starts with that column. */
interface Filter {
  column: string;
  value: string | number;
  index: RunIndex;
}

function filtersOf(q: CheckedQuery): Filter[] {
  const filters: Filter[] = [];
  const { state } = q;
  if (state !== undefined)
    filters.push(
      'active' in state
        ? { column: 'active', value: 1, index: 'runs_by_active' }
        : 'outcome' in state
          ? { column: 'outcome', value: state.outcome, index: 'runs_by_outcome' }
          : { column: 'stage', value: state.stage, index: 'runs_by_stage' },
    );
  if (q.repo !== undefined) filters.push({ column: 'repo', value: q.repo, index: 'runs_by_repo' });
  if (q.source !== undefined)
    filters.push(
      'name' in q.source
        ? { column: 'source_name', value: q.source.name, index: 'runs_by_source' }
        : { column: 'source_kind', value: q.source.kind, index: 'runs_by_kind' },
    );
  if (q.agent !== undefined) filters.push({ column: 'agent', value: q.agent, index: 'runs_by_agent' });
  return filters;
}

/** Active runs and those in a running stage are few at any history size: the most selective filter. */
const fewRuns = (state: CheckedQuery['state']) =>
  state !== undefined && ('active' in state || ('stage' in state && !isTerminal(state.stage as Stage)));

/** The index that answers `q` and the terms of its filters and time bounds (the cursor aside). */
export function planOf(q: CheckedQuery): RunsSql {
  const index = indexFor(q);
  const held: readonly string[] = runIndexes[index];
  const where: string[] = [];
  const args: (string | number)[] = [];
  for (const filter of filtersOf(q)) {
    where.push(
      held.includes(filter.column)
        ? `${filter.column} = ?`
        : `EXISTS (SELECT 1 FROM runs AS f INDEXED BY ${filter.index} WHERE f.${filter.column} = ? AND f.created_ms = runs.created_ms AND f.run_id = runs.run_id)`,
    );
    args.push(filter.value);
  }
  if (q.sinceMs !== undefined) {
    where.push('created_ms >= ?');
    args.push(q.sinceMs);
  }
  if (q.untilMs !== undefined) {
    where.push('created_ms <= ?');
    args.push(q.untilMs);
  }
  return { index, where, args };
}

function indexFor(q: CheckedQuery): RunIndex {
  const { state } = q;
  const stateIndex =
    state === undefined ? undefined : 'active' in state ? 'active' : 'outcome' in state ? 'outcome' : 'stage';
  if (q.repo !== undefined && stateIndex !== undefined) return `runs_by_repo_${stateIndex}`;
  if (fewRuns(state)) return stateIndex === 'active' ? 'runs_by_active' : 'runs_by_stage';
  if (q.repo !== undefined) return 'runs_by_repo';
  if (q.agent !== undefined) return 'runs_by_agent';
  if (q.source !== undefined) return 'name' in q.source ? 'runs_by_source' : 'runs_by_kind';
  if (stateIndex !== undefined) return `runs_by_${stateIndex}`;
  return 'runs_by_created';
}

const whereOf = (terms: string[]) => (terms.length === 0 ? '' : `WHERE ${terms.join(' AND ')}`);

/** The page's SELECT: one row past the limit, which says whether a next page exists. */
export function pageSql(q: CheckedQuery): { sql: string; args: (string | number)[] } {
  const plan = planOf(q);
  const where = [...plan.where];
  const args = [...plan.args];
  if (q.after !== undefined) {
    // The first term bounds the walk; the second steps over the runs at the cursor's instant up to it.
    where.push('created_ms <= ?', '(created_ms < ? OR run_id < ?)');
    args.push(q.after.ms, q.after.ms, q.after.runId);
  }
  return {
    sql: `SELECT run_id, created_ms, record FROM runs INDEXED BY ${plan.index} ${whereOf(where)} ORDER BY created_ms DESC, run_id DESC LIMIT ?`,
    args: [...args, q.limit + 1],
  };
}

/** The COUNT of every run the filters match: a walk over index entries, never records. */
export function countSql(q: CheckedQuery): { sql: string; args: (string | number)[] } {
  const plan = planOf(q);
  return { sql: `SELECT COUNT(*) AS n FROM runs INDEXED BY ${plan.index} ${whereOf(plan.where)}`, args: plan.args };
}

/** One page of `q` and the cursor of the next, each run summarized by `summarize`. */
export function readPage(
  db: SqliteDatabase,
  q: CheckedQuery,
  summarize: (runId: string, text: string) => RunSummary,
): { runs: RunSummary[]; nextCursor?: string } {
  const { sql, args } = pageSql(q);
  const rows = db.prepare(sql).all(...args) as { run_id: string; created_ms: number; record: string }[];
  const shown = rows.slice(0, q.limit);
  const last = shown[shown.length - 1];
  return {
    runs: shown.map((row) => summarize(row.run_id, row.record)),
    ...(rows.length > q.limit && last !== undefined
      ? { nextCursor: writeCursor({ ms: last.created_ms, runId: last.run_id }) }
      : {}),
  };
}

/** How many runs match `q`'s filters. */
export function countRuns(db: SqliteDatabase, q: CheckedQuery): number {
  const { sql, args } = countSql(q);
  return (db.prepare(sql).get(...args) as { n: number }).n;
}
