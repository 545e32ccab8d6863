import {
  checkStatus,
  countChecks,
  formatCheckCounts,
  latestChecks,
  summarizeReason,
  truncateHead,
  type RunRecord,
} from '@codefleet/core';
import type { Report } from './port.js';

/** Where a job stands, as chat adapters show it (a reaction, an emoji in the status line). */
export type ReportState = 'queued' | 'running' | 'done' | 'answered' | 'failed' | 'cancelled';

/** A report in plain words, for services without Markdown (LINE) or with their own (Slack). */
export interface PlainReport {
  state: ReportState;
  /** One line: what happened. */
  headline: string;
  /** Further lines, each plain text (the PR link, checks, the reason, how to retry). */
  details: string[];
  /** An answer or a reason quoted whole (bounded), for a code block or a message of its own. */
  quote?: string;
}

/** Characters of an answer or reason a chat message quotes. */
export const maxQuoteChars = 3_000;

/**
 * The words of a report, shared by the chat and callback adapters so that Slack, LINE and
 * an HTTP client are told the same things. The job's title is not repeated: it is the
 * user's own text, and quoting it back is where mentions and links would get in.
 */
export function plainReport(report: Report): PlainReport {
  switch (report.kind) {
    case 'queued':
      return {
        state: 'queued',
        headline: `Queued as job ${report.job.id}.`,
        details: [`Repository: ${report.job.repo}`],
      };
    case 'started':
      return { state: 'running', headline: `Working on it (attempt ${report.attempt}).`, details: [] };
    case 'progress':
      return {
        state: 'running',
        headline: `Working on it: ${report.stage}.`,
        details: report.note === undefined ? [] : [truncateHead(report.note, 300)],
      };
    case 'finished': {
      const latest = latestChecks(report.run);
      const preexisting = latest.filter((v) => checkStatus(v) === 'preexisting').map((v) => v.step);
      const unverifiable = latest.filter((v) => checkStatus(v) === 'unverifiable').map((v) => v.step);
      return {
        state: 'done',
        headline: report.pullRequest.draft
          ? `Opened a draft pull request #${report.pullRequest.number}: the definition of done ${report.run.dod_result ?? 'failed'}.`
          : `Opened pull request #${report.pullRequest.number}.`,
        details: [
          `PR: ${report.pullRequest.url}`,
          ...(latest.length === 0 ? [] : [`Checks: ${formatCheckCounts(countChecks(latest))}`]),
          ...(preexisting.length === 0 ? [] : [`Failing on the base commit too: ${preexisting.join(', ')}`]),
          ...(unverifiable.length === 0
            ? []
            : [`Could not run on the worker, so it checked nothing: ${unverifiable.join(', ')}`]),
        ],
      };
    }
    case 'answered':
      return {
        state: 'answered',
        headline: 'Answer (read-only: nothing was changed or published):',
        details: [],
        quote: truncateHead(report.answer, maxQuoteChars),
      };
    case 'failed':
      return {
        state: 'failed',
        headline:
          report.error.verdict === 'transient'
            ? `Gave up after ${report.run.attempts.length} attempts on a temporary problem (${report.error.code}).`
            : `Could not complete this (${report.error.code}).`,
        details: [`Reason: ${summarizeReason(report.reason, 300)}`, retryHint(report.job).replace(/`/g, '')],
      };
    case 'cancelled':
      return {
        state: 'cancelled',
        headline: `Stopped: ${report.by} asked to cancel it. Nothing was published.`,
        details: [],
      };
  }
}

/** How to try a failed job again, from where it was asked for. */
export function retryHint(job: Pick<RunRecord['job'], 'id' | 'source'>): string {
  switch (job.source.kind) {
    case 'issue':
      return 'To retry, comment `/codefleet retry` or remove and re-add the trigger label.';
    case 'chat':
      return `To retry, say \`/ops retry ${job.id}\` in the thread, or run \`codefleet dlq redrive ${job.id}\`.`;
    default:
      return `To retry: \`codefleet dlq redrive ${job.id}\`.`;
  }
}
