import { isTerminal, type Stage } from '@codefleet/core';
import type { SqliteDatabase } from '@codefleet/sqlite';
import type { RunSummary } from './port.js';
import { writeCursor } from './page-cursor.js';
import { summarizeStored, type CheckedQuery } from './query.js';
import type { RunIndex } from './sqlite-run-index.js';

// A page is one walk down one index (sqlite-run-index.ts), newest first, stopping at the limit.
// The index is chosen here, not by SQLite's planner: without statistics it cannot know that
// active runs are a handful among 100,000 or that a repository holds fewer runs than a state,
// and a wrong guess walks all of them. Filters the index does not hold are checked on the rows
// it yields; the repository-and-state indexes keep the common pair a short walk too.

/** SQL for one read: the index it goes through, its WHERE terms and their values. */
export interface RunsSql {
  index: RunIndex;
  where: string[];
  args: (string | number)[];
}

/** Active runs and those in a running stage are few at any history size: the most selective filter. */
const fewRuns = (state: CheckedQuery['state']) =>
  state !== undefined && ('active' in state || ('stage' in state && !isTerminal(state.stage as Stage)));

/** The index that answers `q` and the terms of its filters and time bounds (the cursor aside). */
export function planOf(q: CheckedQuery): RunsSql {
  const where: string[] = [];
  const args: (string | number)[] = [];
  const term = (sql: string, value?: string | number) => {
    where.push(sql);
    if (value !== undefined) args.push(value);
  };
  const { state } = q;
  const stateIndex =
    state === undefined ? undefined : 'active' in state ? 'active' : 'outcome' in state ? 'outcome' : 'stage';
  if (state !== undefined)
    if ('active' in state) term('active = 1');
    else if ('outcome' in state) term('outcome = ?', state.outcome);
    else term('stage = ?', state.stage);
  if (q.repo !== undefined) term('repo = ?', q.repo);
  if (q.source !== undefined)
    if ('name' in q.source) term('source_name = ?', q.source.name);
    else term('source_kind = ?', q.source.kind);
  if (q.agent !== undefined) term('agent = ?', q.agent);
  if (q.sinceMs !== undefined) term('created_ms >= ?', q.sinceMs);
  if (q.untilMs !== undefined) term('created_ms <= ?', q.untilMs);
  return { index: indexFor(q, stateIndex), where, args };
}

function indexFor(q: CheckedQuery, state: 'active' | 'outcome' | 'stage' | undefined): RunIndex {
  if (q.repo !== undefined && state !== undefined) return `runs_by_repo_${state}`;
  if (fewRuns(q.state)) return state === 'active' ? 'runs_by_active' : 'runs_by_stage';
  if (q.repo !== undefined) return 'runs_by_repo';
  if (q.agent !== undefined) return 'runs_by_agent';
  if (q.source !== undefined) return 'name' in q.source ? 'runs_by_source' : 'runs_by_kind';
  if (state !== undefined) return `runs_by_${state}`;
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

/** One page of `q` and the cursor of the next. */
export function readPage(db: SqliteDatabase, q: CheckedQuery): { runs: RunSummary[]; nextCursor?: string } {
  const { sql, args } = pageSql(q);
  const rows = db.prepare(sql).all(...args) as { run_id: string; created_ms: number; record: string }[];
  const shown = rows.slice(0, q.limit);
  const last = shown[shown.length - 1];
  return {
    runs: shown.map((row) => summarizeStored(row.run_id, row.record)),
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
