import {
  baseWords,
  changedFilesOf,
  checkStatus,
  countChecks,
  failsOnBase,
  formatCheckCounts,
  formatDuration,
  latestChecks,
  skipReason,
  truncateHead,
  truncateTail,
  type AgentRun,
  type RunRecord,
  type Verification,
} from '@codefleet/core';
import { escapeInline, fence, table } from '@codefleet/forge';
import { tierSection } from './tier-note.js';

/** Options of {@link renderTaskNote}. */
export interface TaskNoteOptions {
  /** Issue to close when the PR merges (`#12`, `owner/repo#12`); defaults to the job's issue. */
  issueRef?: string;
  /** Upper bound of the note's length in characters; GitHub caps PR bodies at 65 536. */
  maxChars?: number;
}

/** Default bound of a task note, leaving room under GitHub's PR body limit. */
const defaultTaskNoteMaxChars = 60_000;

// Row and cell caps keep the fixed part of the note well under the bound whatever the
// run holds (about 53 000 characters at worst), so only log excerpts need trimming.
const cellChars = 160;
const maxRows = { criteria: 30, timeline: 40, attempts: 10, agentRuns: 30, verification: 40, files: 50 } as const;
const bodyChars = 3000;
const maxExcerpts = 8;
const minExcerptChars = 300;

function cell(text: string | number | boolean | null | undefined, maxChars = cellChars): string {
  if (text === null || text === undefined || text === '') return '–';
  return escapeInline(String(text), maxChars);
}

function lastRows<T>(items: readonly T[], cap: number): { rows: readonly T[]; omitted: string } {
  if (items.length <= cap) return { rows: items, omitted: '' };
  return { rows: items.slice(-cap), omitted: `\n\n_${items.length - cap} earlier rows omitted._` };
}

function section(title: string, content: string): string {
  return `## ${title}\n\n${content}`;
}

function issueLine(run: RunRecord, opts: TaskNoteOptions): string | undefined {
  if (opts.issueRef !== undefined) {
    const ref = opts.issueRef.replace(/\s+/g, ' ').trim();
    return ref === '' ? undefined : `Fixes ${ref}`;
  }
  return run.job.source.kind === 'issue' ? `Fixes #${run.job.source.number}` : undefined;
}

function summary(run: RunRecord): string {
  const { job } = run;
  const source = job.source;
  // The issue reference is ours to render (a validated integer); chat names are not.
  const from =
    source.kind === 'issue'
      ? `issue #${source.number}`
      : source.kind === 'chat'
        ? `chat ${cell(source.platform, 40)} ${cell(source.channel, 100)}`
        : source.kind === 'ci'
          ? `CI of pull request #${source.pull}`
          : source.kind;
  const rows: [string, string][] = [
    ['Outcome', cell(run.outcome ?? `in progress (${run.stage})`)],
    ['DoD', cell(run.dod_result ?? 'not run')],
    ['Repository', cell(job.repo)],
    ['Branch', cell(run.branch)],
    // The note is the pull request's own body: before the PR exists there is nothing to link,
    // and once it does, a link to itself says nothing.
    ...(run.pull_request === undefined
      ? []
      : [['Pull request', run.pull_request.draft ? 'this one (draft)' : 'this one'] as [string, string]]),
    ...(run.verification.length === 0
      ? []
      : [
          ['Checks', `${formatCheckCounts(countChecks(latestChecks(run)))} (latest run of each step)`] as [
            string,
            string,
          ],
        ]),
    ['Job', `${cell(job.id)} (${job.type}, ${job.priority} priority)`],
    ['Requested by', `${cell(job.requested_by)} via ${from}`],
    ['Run', `${cell(run.run_id)}, created ${cell(run.created_at)}, updated ${cell(run.updated_at)}`],
  ];
  if (run.error !== undefined) {
    rows.push(['Error', `${cell(run.error.code)} (${cell(run.error.verdict)}): ${cell(run.error.message, 400)}`]);
  }
  return table(['', ''], rows);
}

function description(run: RunRecord): string | undefined {
  if (run.job.body.trim() === '') return undefined;
  // Fenced, not rendered: issue text could hold "Fixes #N", mentions or HTML.
  return section('Task', fence(truncateHead(run.job.body, bodyChars), 'text'));
}

function criteria(run: RunRecord): string | undefined {
  if (run.acceptance_criteria.length === 0) return undefined;
  const { rows, omitted } = lastRows(run.acceptance_criteria, maxRows.criteria);
  return section('Acceptance criteria', rows.map((c) => `- [ ] ${cell(c, 200)}`).join('\n') + omitted);
}

function changedFiles(run: RunRecord): string | undefined {
  const files = changedFilesOf(run);
  if (files.length === 0) return undefined;
  const shown = files.slice(0, maxRows.files).map((f) => `- ${cell(f)}`);
  const rest = files.length - shown.length;
  const more = rest > 0 ? `\n\n_and ${rest} more file${rest === 1 ? '' : 's'}._` : '';
  return section(`Changed files (${files.length})`, shown.join('\n') + more);
}

// Its own section, so a reviewer sees that merging also changes what every later task is told.
function memoryUpdates(run: RunRecord): string | undefined {
  const files = run.memory_updates ?? [];
  if (files.length === 0) return undefined;
  const shown = files
    .slice(0, maxRows.files)
    .map((f) => `- ${cell(f)}`)
    .join('\n');
  return section(
    'Memory bank update proposed',
    `This change adds or edits the repository's memory bank (\`.codefleet/memory/\`), which is summarized into every later task's prompt. Review the diff of these files as such:\n\n${shown}`,
  );
}

function timeline(run: RunRecord): string {
  const { rows, omitted } = lastRows(run.stages, maxRows.timeline);
  const body = table(
    ['Stage', 'At', 'Attempt', 'Note'],
    rows.map((e) => [cell(e.stage), cell(e.at), cell(e.attempt), cell(e.note)]),
  );
  return section('Timeline', body + omitted);
}

function attempts(run: RunRecord): string | undefined {
  if (run.attempts.length === 0) return undefined;
  const { rows, omitted } = lastRows(run.attempts, maxRows.attempts);
  const body = table(
    ['#', 'Worker', 'Started', 'Ended', 'Outcome', 'Error'],
    rows.map((a) => [
      cell(a.n),
      cell(a.worker_id, 80),
      cell(a.started_at),
      cell(a.ended_at),
      cell(a.outcome),
      a.error === undefined ? '–' : `${cell(a.error.code)}: ${cell(a.error.message, 200)}`,
    ]),
  );
  return section('Attempts', body + omitted);
}

function agentRuns(run: RunRecord): string | undefined {
  if (run.agent_runs.length === 0) return undefined;
  const { rows, omitted } = lastRows(run.agent_runs, maxRows.agentRuns);
  // Model tokens only where an agent counts them (the built-in agent): reviewers see what
  // the change cost, and the columns of other agents' notes stay as they were.
  const counted = run.agent_runs.filter((r) => r.tokens !== undefined);
  const tokens = (r: AgentRun) => (r.tokens === undefined ? '–' : `${r.tokens.prompt} + ${r.tokens.completion}`);
  const body = table(
    [
      'Pass',
      'Attempt',
      'Agent',
      'Exit code',
      'Signal',
      'Timed out',
      'Duration',
      'Changed files',
      'Outcome',
      ...(counted.length > 0 ? ['Tokens'] : []),
    ],
    rows.map((r) => [
      cell(r.pass),
      cell(`${r.attempt}.${r.inner_attempt}`),
      cell(r.agent, 64),
      cell(r.exit_code),
      cell(r.signal),
      r.timed_out ? 'yes' : 'no',
      cell(formatDuration(r.duration_ms)),
      cell(r.changed_files.length),
      cell(r.outcome),
      ...(counted.length > 0 ? [tokens(r)] : []),
    ]),
  );
  const total = counted.reduce((sum, r) => sum + (r.tokens?.prompt ?? 0) + (r.tokens?.completion ?? 0), 0);
  const totalLine =
    counted.length > 0
      ? `\n\nModel tokens in all: ${total} (prompt + completion, as the model server counted them).`
      : '';
  return section('Agent runs', body + omitted + totalLine);
}

function result(v: Verification): string {
  switch (checkStatus(v)) {
    case 'passed':
      return 'passed';
    case 'failed':
      return '**failed**';
    case 'skipped':
      return `skipped: ${cell(skipReason(v), 120)}`;
    case 'preexisting':
    case 'unverifiable':
      return baseWords(v);
  }
}

function verification(run: RunRecord): string | undefined {
  if (run.verification.length === 0) return undefined;
  const { rows, omitted } = lastRows(run.verification, maxRows.verification);
  const body = table(
    ['Pass', 'Attempt', 'Step', 'Command', 'Exit code', 'Duration', 'Result'],
    rows.map((v) => {
      const skipped = checkStatus(v) === 'skipped';
      return [
        cell(v.pass),
        cell(`${v.attempt}.${v.inner_attempt}`),
        cell(v.step),
        cell(v.command.join(' ')),
        skipped ? '–' : cell(v.timed_out ? 'timeout' : (v.exit_code ?? v.signal)),
        skipped ? '–' : cell(formatDuration(v.duration_ms)),
        result(v),
      ];
    }),
  );
  return section('Verification', body + omitted);
}

interface Failure {
  label: string;
  output: string;
  order: readonly [number, number, number, number];
}

function byOrder(a: Failure, b: Failure): number {
  for (let i = 0; i < a.order.length; i += 1) {
    const d = (a.order[i] ?? 0) - (b.order[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function isFailedAgentRun(r: AgentRun): boolean {
  return r.outcome === 'failed' || r.outcome === 'timeout' || r.outcome === 'error';
}

// A failure the change fixed later reads differently from one it ended with: a reviewer of a
// green PR should not wonder whether the log below is still true.
function failureNote(run: RunRecord, v: Verification): string {
  if (failsOnBase(v)) return `: ${baseWords(v)}`;
  const later = run.verification
    .slice(run.verification.indexOf(v) + 1)
    .find((w) => w.step === v.step && checkStatus(w) === 'passed');
  return later === undefined ? '' : `, passed later in attempt ${later.attempt}.${later.inner_attempt}`;
}

function failures(run: RunRecord): Failure[] {
  const list: Failure[] = [
    ...run.agent_runs.filter(isFailedAgentRun).map((r): Failure => ({
      label: `agent ${r.agent}, ${r.pass} pass, attempt ${r.attempt}.${r.inner_attempt}: ${r.outcome}`,
      output: r.output_tail,
      order: [r.attempt, r.pass === 'implement' ? 0 : 1, r.inner_attempt, 0],
    })),
    ...run.verification
      .filter((v: Verification) => !v.passed && v.skipped !== true)
      .map((v): Failure => ({
        label: `${v.step}: ${v.command.join(' ')} (${v.pass} pass, attempt ${v.attempt}.${v.inner_attempt})${failureNote(run, v)}`,
        output: v.output_tail,
        order: [v.attempt, v.pass === 'implement' ? 0 : 1, v.inner_attempt, 1],
      })),
  ];
  // The most recent failures explain the outcome best; older ones go first when trimming.
  return list.sort(byOrder).slice(-maxExcerpts);
}

function excerpts(run: RunRecord, budget: number): string | undefined {
  let list = failures(run);
  const overhead = 200;
  while (list.length > 0 && Math.floor(budget / list.length) - overhead < minExcerptChars) list = list.slice(1);
  if (list.length === 0) return undefined;
  const perExcerpt = Math.floor(budget / list.length) - overhead;
  const blocks = list.map((f) => {
    const output = f.output.trim() === '' ? '(no output)' : truncateTail(f.output, perExcerpt);
    return `**${escapeInline(f.label, 160)}**\n\n${fence(output, 'text')}`;
  });
  return section('Failure logs', blocks.join('\n\n'));
}

function join(parts: readonly (string | undefined)[]): string {
  return `${parts.filter((p): p is string => p !== undefined).join('\n\n')}\n`;
}

/**
 * Renders a run as a Markdown task note, the body of its pull request: title, the
 * `Fixes #N` line, outcome, DoD result and check counts, the escalation tiers (which one
 * solved it), acceptance criteria, the files
 * changed, the stage timeline, attempts, agent runs, verification (skipped and
 * pre-existing failures told apart) and excerpts of failure logs. Untrusted text is
 * escaped or fenced so it cannot break out of its cell or block, and the note stays
 * within `maxChars` (excerpts are trimmed first, then dropped).
 */
export function renderTaskNote(run: RunRecord, opts: TaskNoteOptions = {}): string {
  const maxChars = opts.maxChars ?? defaultTaskNoteMaxChars;
  const head = [`# ${escapeInline(run.job.title, 400)}`, issueLine(run, opts), summary(run)];
  const rest = [
    tierSection(run),
    description(run),
    criteria(run),
    changedFiles(run),
    memoryUpdates(run),
    timeline(run),
    attempts(run),
    agentRuns(run),
    verification(run),
  ];
  const fixed = join([...head, ...rest]);
  const budget = maxChars - fixed.length - 2;
  const logs = budget > 0 ? excerpts(run, budget) : undefined;
  const note = join([...head, ...rest, logs]);
  if (note.length <= maxChars) return note;
  // Only reachable with a maxChars far below the default: drop whole sections from the
  // end rather than cut mid-block, which could leave a fence open.
  const parts = [...head, ...rest];
  while (parts.length > 1 && join(parts).length > maxChars) parts.pop();
  const shortened = join(parts);
  return shortened.length <= maxChars ? shortened : `${truncateHead(shortened, maxChars - 1)}\n`;
}
