import {
  formatDuration,
  isTerminal,
  runSourceName,
  statusLabel,
  type RunRecord,
  type TaskStatusView,
  type Verification,
} from '@codefleet/core';
import { ansiHtml } from '../ansi.js';
import { clockTime, timeAgo } from '../format.js';
import { html, type Html } from '../html.js';
import type { JournalEntry } from '@codefleet/store';
import { cancelNote } from './cancel-note.js';
import { actionButton } from './layout.js';
import { agentRunFacts, modelCallsTable, runCostText, tiersSection } from './run-costs.js';
import { progressSection, type LiveProgress } from './run-progress.js';
import { prLink, stateOf } from './runs.js';

/** What the run page shows besides the record. */
export interface RunPageFacts {
  run: RunRecord;
  journal: JournalEntry[];
  /** A cancel asked for and not yet acted on. */
  cancel?: { by: string; at: number };
  /** The id of the job's dead letter, when it is in the dead-letter queue. */
  deadLetterId?: string;
  /** The job's latest run, when it is another (the job was redriven or ran again since). */
  laterRunId?: string;
  /** The task's status, derived from the run and its PR's state on the forge. */
  status?: TaskStatusView;
  /** What the worker running it says it is doing (unfinished runs). */
  live?: LiveProgress;
  now: number;
  csrf: string;
  readOnly: boolean;
}

/**
 * Checks in the order a reader needs them: failures of the change first, then pre-existing
 * failures, then the rest, each group in run order.
 */
function checksInOrder(checks: readonly Verification[]): Verification[] {
  const rank = (c: Verification) => (c.passed || c.skipped === true ? 2 : c.preexisting === true ? 1 : 0);
  return checks
    .map((c, i) => ({ c, i }))
    .sort((a, b) => rank(a.c) - rank(b.c) || a.i - b.i)
    .map(({ c }) => c);
}

function checkVerdict(c: Verification): string {
  if (c.skipped === true) return 'skipped';
  if (c.passed) return 'passed';
  if (c.preexisting === true) return c.unverifiable === true ? 'unverifiable here' : 'failing before the change too';
  return c.timed_out ? 'timed out' : 'failed';
}

function actions(f: RunPageFacts): Html | string {
  if (f.readOnly) return '';
  const base = `/runs/${encodeURIComponent(f.run.run_id)}`;
  const buttons: Html[] = [];
  // A link to the confirmation page, which asks for the reason.
  if (!isTerminal(f.run.stage) && f.cancel === undefined)
    buttons.push(html`<a href="${base}/cancel" class="button danger">Cancel…</a>`);
  // Only the job's latest run is retried: an earlier one has been run again already.
  if (isTerminal(f.run.stage) && f.laterRunId === undefined)
    buttons.push(actionButton(`${base}/retry`, 'Retry', f.csrf));
  if (f.deadLetterId !== undefined)
    buttons.push(actionButton(`/dead-letters/${encodeURIComponent(f.deadLetterId)}/redrive`, 'Redrive', f.csrf));
  return buttons.length === 0 ? '' : html`<div class="actions">${buttons}</div>`;
}

function journalLine(entry: JournalEntry, now: number): Html {
  if (entry.kind === 'action') {
    return html`<li>${clockTime(now, entry.at)} <strong>${entry.action}</strong> by ${entry.by} via ${entry.via}${entry.detail === undefined ? '' : html` — ${entry.detail}`}</li>`;
  }
  return html`<li class="warning">${clockTime(now, entry.at)} <strong>${entry.report}</strong> report not delivered to ${entry.requester}: ${entry.error}</li>`;
}

/** The run page's live part. */
export function runBody(f: RunPageFacts): Html {
  const { run } = f;
  return html`
${summarySection(f)}
${progressSection(run, f.live, f.now)}
${timelineSection(run, f.now)}
${checksSection(run)}
${tiersSection(run)}
${agentRunsSection(run)}
${run.answer === undefined ? '' : answerSection(run.answer)}
${taskSection(run)}
${journalSection(f.journal, f.now)}`;
}

function summarySection(f: RunPageFacts): Html {
  const { run, now } = f;
  const runId = encodeURIComponent(run.run_id);
  return html`<section class="summary">
<p><span class="state state-${stateOf(run)}" data-state="${stateOf(run)}">${stateOf(run)}</span> ${run.job.repo}
 · from ${runSourceName(run)} by ${run.job.requested_by} · created ${timeAgo(now, run.created_at)}
 · updated ${timeAgo(now, run.updated_at)}${runCostText(run)} · run <code>${run.run_id}</code></p>
${f.status === undefined ? '' : html`<p class="task-status">Status: <span class="status status-${f.status.status}" data-status="${statusLabel(f.status)}">${statusLabel(f.status)}</span> · ${f.status.note}</p>`}
${f.laterRunId === undefined ? '' : html`<p class="notice">This job ran again since: <a href="/runs/${encodeURIComponent(f.laterRunId)}">${f.laterRunId}</a>.</p>`}
${cancelNote(run, f.cancel, f.journal, now)}
${run.error === undefined ? '' : html`<p class="error"><strong>${run.error.code}</strong> (${run.error.verdict}): ${run.error.message}</p>`}
<p>Pull request: ${prLink(run.pull_request) || 'none'}${run.branch === undefined ? '' : html` · branch <code>${run.branch}</code>`}
 · <a href="/runs/${runId}/record.json" download="${`run-${run.run_id}.json`}">Download the run record (JSON)</a></p>
${actions(f)}
</section>`;
}

function timelineSection(run: RunRecord, now: number): Html {
  return html`<section>
<h2>Timeline</h2>
<ol class="timeline">${run.stages.map((s) => html`<li><span class="state state-${s.stage}">${s.stage}</span> ${clockTime(now, s.at)}${s.attempt > 0 ? html` · attempt ${s.attempt}` : ''}${s.note === undefined ? '' : html` — ${s.note}`}</li>`)}</ol>
${
  run.attempts.length === 0
    ? ''
    : html`<table><thead><tr><th>Attempt</th><th>Worker</th><th>Started</th><th>Ended</th><th>Outcome</th></tr></thead>
<tbody>${run.attempts.map(
        (a) =>
          html`<tr><td>${a.n}</td><td>${a.worker_id}</td><td>${clockTime(now, a.started_at)}</td><td>${a.ended_at === undefined ? '' : clockTime(now, a.ended_at)}</td><td>${a.outcome ?? 'running'}${a.error === undefined ? '' : html` — ${a.error.code}: ${a.error.message}`}</td></tr>`,
      )}</tbody></table>`
}
</section>`;
}

function checksSection(run: RunRecord): Html {
  return html`<section>
<h2>Checks</h2>
${
  run.verification.length === 0
    ? html`<p>None yet.</p>`
    : html`<ul class="checks">${checksInOrder(run.verification).map(
        (c) => html`<li class="check ${c.passed || c.skipped === true ? 'passed' : 'failed'}">
<details${!c.passed && c.skipped !== true && c.preexisting !== true ? html` open` : ''}><summary><strong>${c.step}</strong> <code>${c.command.join(' ')}</code> — ${checkVerdict(c)}
 · exit ${c.exit_code ?? c.signal ?? '–'} · ${formatDuration(c.duration_ms)} · ${c.pass} pass, attempt ${c.attempt}.${c.inner_attempt}</summary>
<pre>${ansiHtml(c.output_tail)}</pre></details></li>`,
      )}</ul>`
}
</section>`;
}

function agentRunsSection(run: RunRecord): Html {
  return html`<section>
<h2>Agent runs</h2>
${
  run.agent_runs.length === 0
    ? html`<p>None yet.</p>`
    : html`<ul class="agent-runs">${run.agent_runs.map(
        (a) => html`<li>
<details><summary><strong>${a.agent}</strong> ${a.pass} pass, attempt ${a.attempt}.${a.inner_attempt} — ${a.outcome}
 · exit ${a.exit_code ?? a.signal ?? '–'}${a.timed_out ? ' (timed out)' : ''} · ${formatDuration(a.duration_ms)} · ${a.changed_files.length} file(s) changed${agentRunFacts(a)}</summary>
${modelCallsTable(a)}
${a.changed_files.length === 0 ? '' : html`<p>${a.changed_files.map((file) => html`<code>${file}</code> `)}</p>`}
<pre>${ansiHtml(a.output_tail)}</pre></details></li>`,
      )}</ul>`
}
</section>`;
}

function answerSection(answer: string): Html {
  return html`<section><h2>Answer</h2><pre>${ansiHtml(answer)}</pre></section>`;
}

function taskSection(run: RunRecord): Html {
  return html`<section>
<h2>Task</h2>
<p class="task-title">${run.job.title}</p>
${run.job.body === undefined || run.job.body === '' ? '' : html`<details><summary>Description</summary><pre>${run.job.body}</pre></details>`}
</section>`;
}

function journalSection(journal: readonly JournalEntry[], now: number): Html {
  return html`<section>
<h2>Journal</h2>
${
  journal.length === 0
    ? html`<p>No action taken on this run from outside the pipeline.</p>`
    : html`<ul class="journal">${journal.map((entry) => journalLine(entry, now))}</ul>`
}
</section>`;
}
