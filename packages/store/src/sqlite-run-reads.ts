import { isTerminal, type Stage } from '@codefleet/core';
import type { SqliteDatabase } from '@codefleet/sqlite';
import type { RunSummary } from './port.js';
import { writeCursor } from './page-cursor.js';
import type { CheckedQuery } from './query.js';
import { runIndexes, type RunIndex } from './sqlite-run-index.js';

// A page is one walk down one index (sqlite-run-index.ts), newest first, stopping at the limit.
// The index is chosen here, not by SQLite's planner: without statistics it cannot know that
// active runs are a handful among 100,000 or that a repository holds fewer runs than a state,
// and a wrong guess walks all of them. When a query has filters the guessed index does not
// hold, the candidates' runs are counted first (`chooseIndex`). A filter the walked index does not hold is checked by a
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

/**
 * The terms of `q`'s filters and time bounds (the cursor aside) on a walk of `index`, by
 * default the one {@link indexFor} guesses: the filters it does not hold are probes (left
 * out without `probes`).
 */
export function planOf(q: CheckedQuery, index: RunIndex = indexFor(q), options = { probes: true }): RunsSql {
  const held: readonly string[] = runIndexes[index];
  const where: string[] = [];
  const args: (string | number)[] = [];
  for (const filter of filtersOf(q)) {
    if (!options.probes && !held.includes(filter.column)) continue;
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

/** The index most likely to hold the fewest runs of `q` (no statistics: see the top). */
function indexFor(q: CheckedQuery): RunIndex {
  const { state } = q;
  const stateIndex =
    state === undefined ? undefined : 'active' in state ? 'active' : 'outcome' in state ? 'outcome' : 'stage';
  if (q.repo !== undefined && stateIndex !== undefined) return `runs_by_repo_${stateIndex}`;
  if (fewRuns(state)) return stateIndex === 'active' ? 'runs_by_active' : 'runs_by_stage';
  if (q.repo !== undefined) return 'runs_by_repo';
  // A field of more values holds fewer runs for each, on average: sources outnumber agents.
  if (q.source !== undefined) return 'name' in q.source ? 'runs_by_source' : 'runs_by_kind';
  if (q.agent !== undefined) return 'runs_by_agent';
  if (stateIndex !== undefined) return `runs_by_${stateIndex}`;
  return 'runs_by_created';
}

const whereOf = (terms: string[]) => (terms.length === 0 ? '' : `WHERE ${terms.join(' AND ')}`);

/**
 * The index to walk for `q`: {@link indexFor}'s guess, unless the query has filters that
 * index does not hold. Each probe costs about six times an index entry counted, and how
 * many runs an agent, a source or a state holds is the history's to say (an agent may have
 * a third of them, a source a tenth), so then the candidates' runs are counted (the
 * guess's first, each next only up to the fewest so far) and the fewest walked. A count of
 * the matches then walks that many and no more; a page stops at its limit either way.
 */
export function chooseIndex(db: SqliteDatabase, q: CheckedQuery): RunIndex {
  const [guess = indexFor(q), ...others] = candidatesOf(q);
  let fewest = { index: guess, runs: runsIn(db, q, guess, -1) };
  for (const index of others) {
    const runs = runsIn(db, q, index, fewest.runs);
    if (runs < fewest.runs) fewest = { index, runs };
  }
  return fewest.index;
}

/** The indexes {@link chooseIndex} counts for `q`, the guess first; the guess alone when it holds every filter. */
export function candidatesOf(q: CheckedQuery): RunIndex[] {
  const guess = indexFor(q);
  const filters = filtersOf(q);
  const held: readonly string[] = runIndexes[guess];
  if (fewRuns(q.state) || filters.every((filter) => held.includes(filter.column))) return [guess];
  return [...new Set([guess, ...filters.map((filter) => filter.index)])];
}

/** How many runs in `q`'s time bounds match the filters `index` holds, counted up to a cap (-1: all). */
export function cappedCountSql(q: CheckedQuery, index: RunIndex): { sql: string; args: (string | number)[] } {
  const only = planOf(q, index, { probes: false });
  return {
    sql: `SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs INDEXED BY ${index} ${whereOf(only.where)} LIMIT ?)`,
    args: only.args,
  };
}

function runsIn(db: SqliteDatabase, q: CheckedQuery, index: RunIndex, cap: number): number {
  const { sql, args } = cappedCountSql(q, index);
  return (db.prepare(sql).get(...args, cap) as { n: number }).n;
}

/** The page's SELECT through `index`: one row past the limit, which says whether a next page exists. */
export function pageSql(q: CheckedQuery, index?: RunIndex): { sql: string; args: (string | number)[] } {
  const plan = planOf(q, index);
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

/** The COUNT of every run the filters match through `index`: a walk over index entries, never records. */
export function countSql(q: CheckedQuery, index?: RunIndex): { sql: string; args: (string | number)[] } {
  const plan = planOf(q, index);
  return { sql: `SELECT COUNT(*) AS n FROM runs INDEXED BY ${plan.index} ${whereOf(plan.where)}`, args: plan.args };
}

/** One page of `q` through `index` and the cursor of the next, each run summarized by `summarize`. */
export function readPage(
  db: SqliteDatabase,
  q: CheckedQuery,
  summarize: (runId: string, text: string) => RunSummary,
  index?: RunIndex,
): { runs: RunSummary[]; nextCursor?: string } {
  const { sql, args } = pageSql(q, index);
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

/** How many runs match `q`'s filters, counted through `index`. */
export function countRuns(db: SqliteDatabase, q: CheckedQuery, index?: RunIndex): number {
  const { sql, args } = countSql(q, index);
  return (db.prepare(sql).get(...args) as { n: number }).n;
}
