import { isTerminal, taskFactsOf, taskStatusesOf } from '@codefleet/core';
import type { DashboardDeps } from './deps.js';
import type { Html } from './html.js';
import { readOverview } from './overview.js';
import { deadLettersBody } from './pages/dead-letters.js';
import { overviewBody } from './pages/overview.js';
import { runBody, type RunPageFacts } from './pages/run.js';
import { latestRunOf } from './runs-read.js';

/**
 * A live part of a page, read now: its markup and a fingerprint of the data it shows (not
 * of the markup, whose "3s ago" changes every second), so an update is sent only when
 * something happened.
 */
export interface View {
  body: Html;
  fingerprint: string;
}

/** How a view is rendered for one viewer. */
export interface ViewContext {
  csrf: string;
}

/** The overview's live part. */
export async function overviewView(deps: DashboardDeps): Promise<View> {
  const overview = await readOverview(deps, deps.now().getTime());
  const { now: _now, ...facts } = overview;
  return { body: overviewBody(overview), fingerprint: JSON.stringify(facts) };
}

/** How many dead letters are scanned for a run's job. */
const deadLetterScan = 1000;

/** The run page's live part, or undefined when there is no such run. */
export async function runView(deps: DashboardDeps, runId: string, ctx: ViewContext): Promise<View | undefined> {
  const run = await deps.store.get(runId);
  if (run === undefined) return undefined;
  const [journal, cancel, latest, [status]] = await Promise.all([
    deps.store.journal({ runId, limit: 100 }),
    isTerminal(run.stage) ? undefined : deps.store.cancelRequested(run.job.idempotency_key),
    latestRunOf(deps.store, run.job.id),
    taskStatusesOf([{ ...taskFactsOf(run), repo: run.job.repo }], deps.pullRequestStates),
  ]);
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
    ...(cancel === undefined ? {} : { cancel }),
    ...(letter === undefined ? {} : { deadLetterId: letter.id }),
    ...(latest === undefined || latest.run_id === run.run_id ? {} : { laterRunId: latest.run_id }),
  };
  return { body: runBody({ ...facts, now: deps.now().getTime(), csrf: ctx.csrf }), fingerprint: JSON.stringify(facts) };
}

/** The dead-letter page's content. */
export async function deadLettersView(deps: DashboardDeps, ctx: ViewContext): Promise<View> {
  const letters = await deps.queue.deadLetters({ limit: deadLetterScan });
  return {
    body: deadLettersBody(letters, deps.now().getTime(), ctx.csrf, deps.readOnly),
    fingerprint: JSON.stringify(letters),
  };
}
