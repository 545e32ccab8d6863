import {
  formatDuration,
  formatUsd,
  isTerminal,
  runOutcomes,
  stages,
  statusLabel,
  type TaskStatusView,
} from '@codefleet/core';
import { timeAgo } from '../format.js';
import { html, safeHref, type Html } from '../html.js';
import { sourceFilters, type RunQuery, type RunSummary } from '@codefleet/store';

/** The states the filter offers: unfinished, each outcome, each stage. */
const filterStates: readonly string[] = ['active', ...runOutcomes, ...stages];

/** Time windows the filter offers, to `since = now - window`. */
const windows: Readonly<Record<string, number>> = {
  '1h': 3_600_000,
  '24h': 86_400_000,
  '7d': 604_800_000,
  '30d': 2_592_000_000,
};

/** The runs list's filters as given in the query string (strings, unchecked). */
export type RunFilters = Partial<Record<'state' | 'repo' | 'source' | 'agent' | 'window' | 'since' | 'until', string>>;

const filterKeys = ['state', 'repo', 'source', 'agent', 'window', 'since', 'until'] as const;

/**
 * The filters of a parsed query string. A key given twice arrives as an array (and one
 * given as `repo[a]=` possibly as an object); only its first string is kept, so no filter
 * is ever anything but a string.
 */
export function filtersOf(query: unknown): RunFilters {
  const filters: RunFilters = {};
  if (typeof query !== 'object' || query === null) return filters;
  for (const key of filterKeys) {
    const value: unknown = (query as Record<string, unknown>)[key];
    const first: unknown = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') filters[key] = first;
  }
  return filters;
}

const isoProblem = (value: string) => (Number.isNaN(Date.parse(value)) ? 'not a time' : undefined);

/**
 * The store query of the filters. Unknown states, sources, windows and unreadable times are dropped
 * (and named in `ignored`), never passed to the store as they are.
 */
export function queryOf(filters: RunFilters, now: number, limit: number): { query: RunQuery; ignored: string[] } {
  const query: RunQuery = { limit };
  const ignored: string[] = [];
  const text = (value: string | undefined, max: number) =>
    value === undefined || value.trim() === '' ? undefined : value.trim().slice(0, max);
  const state = text(filters.state, 32);
  if (state !== undefined && filterStates.includes(state)) query.state = state;
  else if (state !== undefined) ignored.push('state');
  const repo = text(filters.repo, 4096);
  if (repo !== undefined) query.repo = repo;
  const source = text(filters.source, 64);
  if (source !== undefined && sourceFilters.includes(source)) query.source = source;
  else if (source !== undefined) ignored.push('source');
  const agent = text(filters.agent, 64);
  if (agent !== undefined) query.agent = agent;
  const window = text(filters.window, 8);
  if (window !== undefined) {
    const ms = windows[window];
    if (ms === undefined) ignored.push('window');
    else query.since = new Date(now - ms).toISOString();
  }
  for (const key of ['since', 'until'] as const) {
    const value = text(filters[key], 64);
    if (value === undefined) continue;
    if (isoProblem(value) !== undefined) ignored.push(key);
    else query[key] = new Date(value).toISOString();
  }
  return { query, ignored };
}

/** The state a run is in, for a badge: its outcome when finished, else its stage. */
export function stateOf(run: { stage: string; outcome?: string | undefined }): string {
  return run.outcome ?? run.stage;
}

/** The runs list: the filter form and the table; `statuses` in the order of `runs` (taskStatusesOf). */
export function runsBody(
  runs: RunSummary[],
  filters: RunFilters,
  ignored: string[],
  now: number,
  statuses: readonly (TaskStatusView | undefined)[] = [],
): Html {
  const selected = (a: string | undefined, b: string) => (a === b ? html` selected` : '');
  return html`
<form method="get" action="/runs" class="filters">
<label>State <select name="state"><option value="">any</option>${filterStates.map((s) => html`<option value="${s}"${selected(filters.state, s)}>${s}</option>`)}</select></label>
<label>Repository <input name="repo" value="${filters.repo ?? ''}" size="24"></label>
<label>Source <input name="source" value="${filters.source ?? ''}" size="8" placeholder="slack, cli…"></label>
<label>Agent <input name="agent" value="${filters.agent ?? ''}" size="8"></label>
<label>Created <select name="window"><option value="">any time</option>${Object.keys(windows).map((w) => html`<option value="${w}"${selected(filters.window, w)}>last ${w}</option>`)}</select></label>
<button type="submit">Filter</button>
</form>
${ignored.length === 0 ? '' : html`<p class="warning">Ignored filters that are not understood: ${ignored.join(', ')}.</p>`}
${
  runs.length === 0
    ? html`<p>No run matches.</p>`
    : html`<table class="runs">
<thead><tr><th>Run</th><th>Status</th><th>State</th><th>Repository</th><th>Source</th><th>Agent</th><th>Worker</th><th>Attempts</th><th>Duration</th><th>Cost</th><th>Created</th><th>PR</th></tr></thead>
<tbody>${runs.map(
        (r, i) =>
          html`<tr>
<td><a href="/runs/${encodeURIComponent(r.runId)}">${r.title}</a><small>${r.runId}</small></td>
<td>${statusCell(statuses[i])}</td>
<td>${stateCell(r)}</td>
<td>${r.repo}</td><td>${r.source}</td><td>${r.agent ?? ''}</td><td>${r.worker ?? ''}</td><td>${r.attempts}</td>
<td>${durationCell(r, now)}</td>
<td class="cost">${r.costUsd === undefined ? '' : formatUsd(r.costUsd)}</td>
<td>${timeAgo(now, r.createdAt)}</td>
<td>${prLink(r.pullRequest)}</td>
</tr>`,
      )}</tbody></table>`
}`;
}

// A record the store cannot read is flagged with why; the rest of the list is served as ever.
function stateCell(r: RunSummary): Html {
  if (r.unreadable !== undefined)
    return html`<span class="state state-unreadable" data-unreadable="true" title="${r.unreadable}">unreadable</span><small>${r.unreadable}</small>`;
  return html`<span class="state state-${stateOf(r)}">${stateOf(r)}</span>${r.errorCode === undefined ? '' : html`<small>${r.errorCode}</small>`}`;
}

// The derived status, its note on hover.
function statusCell(view: TaskStatusView | undefined): Html | string {
  if (view === undefined) return '';
  return html`<span class="status status-${view.status}" title="${view.note}" data-status="${statusLabel(view)}">${statusLabel(view)}</span>`;
}

/**
 * How long a run took, or has been going: the store's duration ends at the run's last
 * update, which for a run still going can be long ago (an agent working for an hour writes
 * nothing), so an unfinished run counts from its creation to now.
 */
function durationCell(r: RunSummary, now: number): Html | string {
  if (!isTerminal(r.stage)) {
    const created = Date.parse(r.createdAt);
    return Number.isFinite(created) ? html`${formatDuration(now - created)}<small>so far</small>` : '';
  }
  return r.durationMs === undefined ? '' : formatDuration(r.durationMs);
}

/** A pull request as a link when its URL is http(s), else its number as text. */
export function prLink(pr: { number: number; url?: string | undefined; draft: boolean } | undefined): Html | string {
  if (pr === undefined) return '';
  const href = safeHref(pr.url);
  const label = `#${pr.number}${pr.draft ? ' (draft)' : ''}`;
  return href === undefined ? label : html`<a href="${href}" rel="noreferrer noopener" target="_blank">${label}</a>`;
}
