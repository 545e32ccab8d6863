import type { Classified, RunRecord } from '@codefleet/core';
import type { Report } from '@codefleet/requester';

/**
 * The final report a finished run gave, rebuilt from its record: what a redelivery of
 * finished work (its ack was lost, maybe with the worker before it could report) sends
 * again. Requesters are idempotent, so a report that did arrive is not duplicated.
 */
export function finalReportOf(run: RunRecord): Report | undefined {
  const { job } = run;
  switch (run.stage) {
    case 'cancelled':
      return {
        kind: 'cancelled',
        job,
        run,
        by: /cancelled by @(\S+)/.exec(run.stages.at(-1)?.note ?? '')?.[1] ?? 'someone',
      };
    case 'done':
      if (run.answer !== undefined) return { kind: 'answered', job, run, answer: run.answer };
      if (run.pull_request === undefined) return undefined;
      return {
        kind: 'finished',
        job,
        run,
        pullRequest: {
          number: run.pull_request.number,
          url: run.pull_request.url ?? '',
          draft: run.pull_request.draft,
        },
      };
    case 'failed': {
      if (run.error === undefined) return undefined;
      const error: Classified = { code: run.error.code, verdict: run.error.verdict, message: run.error.message };
      return { kind: 'failed', job, run, error, reason: run.error.message };
    }
    default:
      return undefined;
  }
}
