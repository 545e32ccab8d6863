import { taskStatusesOf } from '@codefleet/core';
import { readCursor } from '@codefleet/store';
import type { DashboardDeps } from './deps.js';
import { html, type Html } from './html.js';
import { pager, positionOf } from './pages/pager.js';
import { filtersOf, queryOf, runsBody } from './pages/runs.js';

/**
 * Runs on one page of the list, as dead letters. At 100 a page the first read of a page
 * (each run's record checked against the schema, its row drawn) cost 25-45 ms of CPU at
 * 100,000 runs, near the 50 ms target on a busy host; 50 halves it.
 */
const runsPageSize = 50;

/**
 * One page of the runs list under the query string's filters: the store's `page` (an
 * indexed read whatever the history), its total and a link to the next page by cursor. A
 * cursor this store did not give is ignored, as other filters are, and the first page shown.
 */
export async function runsListBody(deps: DashboardDeps, queryString: unknown): Promise<Html> {
  const filters = filtersOf(queryString);
  const given = queryString as Record<string, unknown> | undefined;
  const now = deps.now().getTime();
  const { query, ignored } = queryOf(filters, now, runsPageSize);
  const cursor = typeof given?.cursor === 'string' && given.cursor !== '' ? given.cursor : undefined;
  const cursorOk = cursor !== undefined && isCursor(cursor);
  if (cursor !== undefined && !cursorOk) ignored.push('cursor');
  const page = await deps.store.page(cursorOk ? { ...query, cursor } : query);
  const statuses = await taskStatusesOf(page.runs, deps.pullRequestStates);
  const from = cursorOk ? positionOf(given?.from) : 1;
  const nav = pager({
    path: '/runs',
    keep: filters,
    from,
    shown: page.runs.length,
    total: page.total,
    next:
      page.nextCursor === undefined ? undefined : { cursor: page.nextCursor, from: String(from + page.runs.length) },
    noun: 'runs',
  });
  return html`${nav}
${runsBody(page.runs, filters, ignored, now, statuses)}
${page.runs.length === 0 ? '' : nav}`;
}

function isCursor(text: string): boolean {
  try {
    readCursor(text);
    return true;
  } catch {
    return false;
  }
}
