import { isTerminal, taskFactsOf, taskStatusesOf } from '@codefleet/core';
import type { DashboardDeps } from './deps.js';
import { html, type Html } from './html.js';
import { pager } from './pages/pager.js';
import { readOverview } from './overview.js';
import { deadLettersBody } from './pages/dead-letters.js';
import { overviewBody } from './pages/overview.js';
import { chartsBody } from './pages/charts.js';
import { readFleetCharts } from './fleet-charts.js';
import { runBody, type RunPageFacts } from './pages/run.js';
import { liveProgressOf } from './pages/run-progress.js';
import { latestRunOf } from './runs-read.js';

/**
 * A live part of a page, read now: its markup and a fingerprint of the data it shows (not
 * of the markup, whose "3s ago" changes every second), so an update is sent only when
 * something happened.
 */
export interface View {
  body: Html;
  fingerprint: string;
  /** The page's heading, when the data names it (a run: its task's title). */
  title?: string;
}

/** How a view is rendered for one viewer. */
export interface ViewContext {
  csrf: string;
}

/** The overview's live part. */
export async function overviewView(deps: DashboardDeps): Promise<View> {
  const now = deps.now().getTime();
  const [overview, charts] = await Promise.all([readOverview(deps, now), readFleetCharts(deps, now)]);
  const { now: _now, ...facts } = overview;
  return {
    body: html`${overviewBody(overview)}${chartsBody(charts)}`,
    fingerprint: JSON.stringify({ facts, charts }),
  };
}

/** How many dead letters are scanned for a run's job. */
const deadLetterScan = 1000;

/** What a run page shows, read once for every viewer of it, and their fingerprint. */
export interface RunViewFacts {
  facts: Omit<RunPageFacts, 'now' | 'csrf'>;
  fingerprint: string;
  /** The task's title: the page's heading. */
  title: string;
}

/** The run page's live part, or undefined when there is no such run. */
export async function runView(deps: DashboardDeps, runId: string, ctx: ViewContext): Promise<View | undefined> {
  const read = await readRunView(deps, runId);
  return read === undefined ? undefined : renderRunView(deps, read, ctx);
}

/** The run page's markup for one viewer (their form token) from facts read for all. */
export function renderRunView(deps: Pick<DashboardDeps, 'now'>, read: RunViewFacts, ctx: ViewContext): View {
  return {
    body: runBody({ ...read.facts, now: deps.now().getTime(), csrf: ctx.csrf }),
    fingerprint: read.fingerprint,
    title: read.title,
  };
}

/** Reads what the run page shows, or undefined when there is no such run. */
export async function readRunView(deps: DashboardDeps, runId: string): Promise<RunViewFacts | undefined> {
  const run = await deps.store.get(runId);
  if (run === undefined) return undefined;
  const [journal, cancel, latest, [status], workers] = await Promise.all([
    deps.store.journal({ runId, limit: 100 }),
    isTerminal(run.stage) ? undefined : deps.store.cancelRequested(run.job.idempotency_key),
    latestRunOf(deps.store, run.job.id),
    taskStatusesOf([{ ...taskFactsOf(run), repo: run.job.repo }], deps.pullRequestStates),
    // What its worker says it is doing now (the registry entry its status line feeds).
    isTerminal(run.stage) ? [] : deps.store.listWorkers(),
  ]);
  const live = liveProgressOf(run, workers);
  // Only the job's latest run can be redriven: an earlier one has been already.
  const letter =
    latest?.run_id === run.run_id && run.stage === 'failed'
      ? (await deps.queue.deadLetters({ limit: deadLetterScan })).find((d) => d.job?.id === run.job.id)
      : undefined;
  const facts: Omit<RunPageFacts, 'now' | 'csrf'> = {
    run,
    journal,
    readOnly: deps.readOnly,
    ...(status === undefined ? {} : { status }),
    ...(live === undefined ? {} : { live }),
    ...(cancel === undefined ? {} : { cancel }),
    ...(letter === undefined ? {} : { deadLetterId: letter.id }),
    ...(latest === undefined || latest.run_id === run.run_id ? {} : { laterRunId: latest.run_id }),
  };
  return { facts, fingerprint: JSON.stringify(facts), title: run.job.title };
}

/** Dead letters on one page of their list. */
const deadLettersPageSize = 50;

/**
 * One page of the dead-letter queue, oldest first, from the 1-based position `from`, and
 * how many there are in all (the queue's count). The queue lists its dead letters from the
 * oldest, so a later page reads the ones before it too: a dead-letter queue holds what an
 * operator has yet to redrive or drop, not history, and the read stays bounded by `from`.
 */
export async function deadLettersView(deps: DashboardDeps, ctx: ViewContext, from = 1): Promise<View> {
  const skip = from - 1;
  const [stats, read] = await Promise.all([
    deps.queue.stats(),
    deps.queue.deadLetters({ limit: skip + deadLettersPageSize + 1 }),
  ]);
  const letters = read.slice(skip, skip + deadLettersPageSize);
  const more = read.length > skip + deadLettersPageSize;
  const nav = pager({
    path: '/dead-letters',
    keep: {},
    from,
    shown: letters.length,
    // The count comes from another read than the list: never say fewer than are listed.
    total: Math.max(stats.deadLetter, skip + letters.length + (more ? 1 : 0)),
    next: more ? { from: String(from + letters.length) } : undefined,
    noun: 'dead letters',
  });
  const body = deadLettersBody(letters, deps.now().getTime(), ctx.csrf, deps.readOnly);
  return {
    body: letters.length === 0 && from === 1 ? body : html`${nav}${body}`,
    fingerprint: JSON.stringify(letters),
  };
}
