import {
  checkStatus,
  countChecks,
  failsOnBase,
  formatCheckCounts,
  latestChecks,
  baseWords,
  summarizeReason,
  truncateHead,
  type Classified,
  type RunRecord,
} from '@codefleet/core';
import { escapeInline, fence, type PullRequest } from '@codefleet/forge';
import { retryHint } from '@codefleet/requester';

/** The final status comment of a published run. */
export function successComment(run: RunRecord, pr: Pick<PullRequest, 'number' | 'url' | 'draft'>): string {
  const dod = run.dod_result ?? 'skipped';
  const head = pr.draft
    ? `⚠️ codefleet opened draft PR #${pr.number}: the definition of done ${dod === 'timeout' ? 'timed out' : 'failed'}.`
    : `✅ codefleet opened PR #${pr.number} (definition of done: ${dod}).`;
  const latest = latestChecks(run);
  // A green PR over a step that fails on the base too: the issue says so, not only the PR.
  const checks = latest.length === 0 ? [] : [`- checks: ${formatCheckCounts(countChecks(latest))}`];
  const preexisting = latest
    .filter(failsOnBase)
    .map((v) => `- ${v.step} (\`${escapeInline(v.command.join(' '), 200)}\`): ${baseWords(v)}`);
  return [
    head,
    '',
    `- PR: ${pr.url}`,
    `- branch: \`${run.branch ?? ''}\``,
    `- attempts: ${run.attempts.length}`,
    ...checks,
    ...preexisting,
    '',
    'Status: done',
  ].join('\n');
}

/** Characters of the whole reason the failure report quotes under its summary. */
const reasonChars = 3_000;

/**
 * The failure report: the reason in one line and then whole, the check counts, the
 * last check that failed because of the change with its output, the steps that fail on the
 * base commit too (not held against the change), and how to retry. Transient exhaustion
 * says so, so nobody mistakes an outage for a bad task.
 */
export function failureComment(run: RunRecord, error: Classified, reason: string): string {
  // Pre-existing failures are not why the job failed: never quoted as the failing check.
  const lastFailed = [...run.verification].reverse().find((v) => checkStatus(v) === 'failed');
  const latest = latestChecks(run);
  const preexisting = latest.filter(failsOnBase);
  const summary = summarizeReason(reason, 300);
  const lines = [
    error.verdict === 'transient'
      ? `❌ codefleet gave up after ${run.attempts.length} attempts on a temporary problem (\`${error.code}\`).`
      : `❌ codefleet could not complete this task (\`${error.code}\`).`,
    '',
    `Reason: ${escapeInline(summary)}`,
  ];
  if (summary !== reason.trim()) {
    lines.push(
      '',
      '<details><summary>Whole reason</summary>',
      '',
      fence(truncateHead(reason, reasonChars), 'text'),
      '',
      '</details>',
    );
  }
  if (latest.length > 0) lines.push('', `Checks (latest run of each step): ${formatCheckCounts(countChecks(latest))}.`);
  if (lastFailed) {
    lines.push(
      '',
      `Last failing check: \`${escapeInline(lastFailed.command.join(' '), 200)}\` (exit ${lastFailed.exit_code ?? lastFailed.signal ?? '?'})`,
      '',
      fence(lastFailed.output_tail.slice(-1_500)),
    );
  }
  for (const v of preexisting) {
    lines.push(
      '',
      `${v.step}: \`${escapeInline(v.command.join(' '), 200)}\` (exit ${v.exit_code ?? v.signal ?? '?'}): ${baseWords(v)}.`,
    );
  }
  lines.push('', retryHint(run.job), '', 'Status: failed');
  return lines.join('\n');
}
