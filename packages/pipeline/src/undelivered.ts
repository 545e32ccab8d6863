import { classify } from '@codefleet/core';
import type { Report, ReportRetry } from '@codefleet/requester';
import type { PipelineDeps } from './deps.js';

/**
 * What to do when a final report is given up: record it in the run store's journal, so
 * the dashboard can say that the requester never heard how the run ended. A writer fenced
 * off (its task was taken over: `lease_lost`) did not fail to deliver; the new owner reports.
 */
export function journalUndelivered(
  deps: Pick<PipelineDeps, 'store' | 'requester'>,
  runId: string,
  report: Report,
): Pick<ReportRetry, 'onGiveUp'> {
  return {
    onGiveUp: async (error) => {
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
    },
  };
}
