import {
  changedFilesOf,
  checkStatus,
  countChecks,
  describeCheck,
  formatCheckCounts,
  formatDuration,
  isTerminal,
  latestChecks,
  statusLabel,
  summarizeReason,
  type CheckStatus,
  type RunRecord,
  type TaskStatusView,
  type Verification,
} from '@codefleet/core';
import type { RunSummary } from '@codefleet/store';
import { agentRunLines } from './format-agent-runs.js';

// Line breaks (CR, LF, NEL, U+2028/2029) and tabs become one space; any other C0 or C1
// control, DEL, and the bidirectional overrides that reorder what a terminal shows
// (Trojan Source) become U+FFFD.
const lineBreaks = /\r\n|[\n\r\t\v\f\u0085\u2028\u2029]/g;
// eslint-disable-next-line no-control-regex -- control characters are exactly what is replaced
const controls = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` as one line that is safe to print on a terminal. Titles, error messages and
 * commands come from outside users (GitHub issues, a repository's `.codefleet.yml`): raw,
 * an ESC could rewrite the screen and a newline would break a table. JSON output keeps
 * the exact text.
 */
export function displayText(text: string): string {
  return text.replace(lineBreaks, ' ').replace(controls, '\uFFFD');
}

/** `codefleet runs` table; `now` dates the runs still going. */
export function formatRuns(
  runs: RunSummary[],
  now = Date.now(),
  statuses: readonly (TaskStatusView | undefined)[] = [],
): string {
  if (runs.length === 0) return 'no runs yet';
  const rows = runs.map((r, i) =>
    [
      // A record the store cannot read: flagged here, why in the note under the table.
      r.runId,
      statusCell(statuses[i]),
      r.stage,
      r.unreadable === undefined ? (r.outcome ?? '') : 'UNREADABLE',
      String(r.attempts),
      r.pullRequest ? `#${r.pullRequest.number}${r.pullRequest.draft ? ' (draft)' : ''}` : '',
      // Minutes in UTC: short, and the same on every host of the fleet.
      `${r.createdAt.slice(0, 16).replace('T', ' ')}Z`,
      durationText(r, now),
      r.worker ?? '',
      r.agent ?? '',
      r.source,
      // By code point, so a cut never leaves half of a surrogate pair.
      Array.from(r.title).slice(0, 50).join(''),
    ].map(displayText),
  );
  return table(
    [
      'RUN',
      'STATUS',
      'STAGE',
      'OUTCOME',
      'ATTEMPTS',
      'PR',
      'CREATED',
      'DURATION',
      'WORKER',
      'AGENT',
      'SOURCE',
      'TITLE',
    ],
    rows,
  );
}

const statusCell = (view: TaskStatusView | undefined) => (view === undefined ? '' : statusLabel(view));

/**
 * The store's duration ends at the run's last update, which for a run still going can be
 * long ago (an agent working for an hour writes nothing): such a run counts from its
 * creation to now, as the dashboard does.
 */
function durationText(r: RunSummary, now: number): string {
  if (!isTerminal(r.stage)) {
    const created = Date.parse(r.createdAt);
    return Number.isFinite(created) ? `${formatDuration(Math.max(0, now - created))} so far` : '';
  }
  return r.durationMs === undefined ? '' : formatDuration(r.durationMs);
}

/** A later run of the same job (after a dead-letter redrive), for `codefleet show`. */
export interface LaterRun {
  runId: string;
  stage: string;
  outcome?: string;
}

/** Files `show` lists before it only counts the rest. */
const maxShownFiles = 20;

// Four characters, so the columns line up: a pre-existing failure is neither ok nor FAIL.
const checkMarks: Record<CheckStatus, string> = {
  passed: 'ok  ',
  failed: 'FAIL',
  skipped: 'skip',
  preexisting: 'base',
  unverifiable: 'n/a ',
};

function checkLine(v: Verification): string {
  const status = checkStatus(v);
  const head = `  ${checkMarks[status]} ${v.pass.padEnd(9)} attempt ${v.attempt}.${v.inner_attempt}  ${v.step.padEnd(7)} ${v.command.join(' ')}`;
  if (status === 'skipped') return `${head}  — ${describeCheck(v)}`;
  const facts = `(${v.timed_out ? 'timed out, ' : ''}exit ${v.exit_code ?? v.signal}, ${formatDuration(v.duration_ms)})`;
  return status === 'preexisting' || status === 'unverifiable'
    ? `${head}  ${facts} — ${describeCheck(v)}`
    : `${head}  ${facts}`;
}

/**
 * `codefleet show`: what the run ended as (the error's reason summed up in one line), the
 * files it changed, stage timeline, attempts and checks, the whole reason, and the job's
 * later runs.
 */
export function formatRun(run: RunRecord, later: LaterRun[] = [], status?: TaskStatusView): string {
  const start = Date.parse(run.created_at);
  const lines = [
    `${run.job.title}`,
    `run ${run.run_id} · ${run.job.repo} · stage ${run.stage}${run.outcome ? ` · outcome ${run.outcome}` : ''}${run.dod_result ? ` · DoD ${run.dod_result}` : ''}`,
  ];
  if (status !== undefined) lines.push(`status ${statusLabel(status)} (${status.note})`);
  lines.push(
    ...later.map(
      (l) =>
        `later run: ${l.runId} (stage ${l.stage}${l.outcome ? `, outcome ${l.outcome}` : ''}; see \`codefleet show ${l.runId}\`)`,
    ),
  );
  if (run.pull_request)
    lines.push(
      `pull request #${run.pull_request.number}${run.pull_request.draft ? ' (draft)' : ''} ${run.pull_request.url ?? ''} (${run.pull_request.head} → ${run.pull_request.base})`,
    );
  if (run.error) lines.push(`error ${run.error.code} (${run.error.verdict}): ${summarizeReason(run.error.message)}`);
  const { route } = run.job;
  if (route) lines.push(`route ${route.name} (${route.source}, confidence ${route.confidence}): ${route.reason}`);
  const files = changedFilesOf(run);
  if (files.length > 0) {
    lines.push('', `Changed files (${files.length}):`, ...files.slice(0, maxShownFiles).map((f) => `  ${f}`));
    if (files.length > maxShownFiles) lines.push(`  … and ${files.length - maxShownFiles} more`);
  }
  lines.push('', 'Timeline:');
  lines.push(
    ...run.stages.map(
      (s) =>
        `  +${((Date.parse(s.at) - start) / 1000).toFixed(1).padStart(6)}s  ${s.stage.padEnd(12)} attempt ${s.attempt}${s.note ? `  (${s.note})` : ''}`,
    ),
  );
  lines.push('', ...agentRunLines(run));
  lines.push(
    '',
    run.verification.length === 0
      ? 'Checks: none'
      : `Checks (latest run of each step: ${formatCheckCounts(countChecks(latestChecks(run)))}):`,
  );
  lines.push(...run.verification.map(checkLine));
  // An answer-mode job's result is its answer: shown whole, a display line per line.
  if (run.answer !== undefined)
    lines.push(
      '',
      'Answer (read-only; nothing was published):',
      ...run.answer.split(/\r\n|\n|\r/).map((l) => `  ${l}`),
    );
  if (run.error && summarizeReason(run.error.message) !== run.error.message) {
    // The whole reason, one display line per line of it: the feedback under "Last feedback:".
    lines.push('', 'Reason:', ...run.error.message.split(/\r\n|\n|\r/).map((l) => `  ${l}`));
  }
  // Each entry is one line of output: whatever a field holds cannot start another.
  return lines.map(displayText).join('\n');
}

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}
