import { classify } from '@codefleet/core';
import { jobReporter, type JobReporter, type Report } from '@codefleet/requester';
import type { PipelineDeps } from './deps.js';

/**
 * What to do when a final report is given up: record it in the run store's journal, so
 * the dashboard can say that the requester never heard how the run ended. A writer fenced
 * off (its task was taken over: `lease_lost`) did not fail to deliver; the new owner reports.
 */
function journalUndelivered(
  deps: Pick<PipelineDeps, 'store' | 'requester'>,
  runId: string,
): (report: Report, error: unknown) => Promise<void> {
  return async (report, error) => {
    const c = classify(error);
    if (c.code === 'lease_lost') return;
    await deps.store.record({
      kind: 'undelivered_report',
      runId,
      jobId: report.job.id,
      report: report.kind,
      requester: deps.requester.kind,
      error: `${c.code}: ${c.message}`,
      at: new Date().toISOString(),
    });
  };
}

/**
 * Who tells the requester about a run: progress in the background (latest wins, never
 * awaited by the job), the final report awaited under `settings.reportDeadlineMs` and
 * journaled when it is given up. `before` fences each write; `signal` cuts the final
 * report's wait short (never the job's own signal: a cancel aborts it, and must be told).
 */
export function runReporter(
  deps: Pick<PipelineDeps, 'store' | 'requester' | 'log' | 'settings'>,
  runId: string,
  options: { before?: () => Promise<void>; signal?: AbortSignal } = {},
): JobReporter {
  const deadlineMs = deps.settings.reportDeadlineMs;
  return jobReporter(deps.requester, {
    log: deps.log,
    onGiveUp: journalUndelivered(deps, runId),
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    ...(options.before === undefined ? {} : { before: options.before }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
}
