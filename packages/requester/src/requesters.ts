import type { Job } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { Report, Requester } from './port.js';

/** The CLI's requester: the terminal that asked is watching the run itself. */
export const cliRequester: Requester = {
  kind: 'cli',
  // An evaluation's jobs too: `codefleet eval` reads their run records, nobody waits on a message.
  handles: (job) => job.source.kind === 'cli' || job.source.kind === 'eval',
  report: async () => {},
};

/**
 * One requester over several adapters: each report goes to the first adapter that handles
 * its job. A job nobody handles (a chat platform this worker has no client for) is logged
 * once per report, not thrown: the job's outcome must not depend on whether it could be told.
 */
export function requesterFor(adapters: readonly Requester[], log?: Logger): Requester {
  const pick = (job: Job) => adapters.find((adapter) => adapter.handles(job));
  return {
    kind: adapters.map((a) => a.kind).join('+') || 'none',
    handles: (job) => pick(job) !== undefined,
    async report(report: Report, signal?: AbortSignal): Promise<void> {
      const adapter = pick(report.job);
      if (adapter === undefined) {
        log?.warn(
          { event: 'report.no_requester', job_id: report.job.id, source: report.job.source.kind, report: report.kind },
          `no requester configured for ${describeSource(report.job)}: the ${report.kind} report was not sent`,
        );
        return;
      }
      await adapter.report(report, signal);
    },
  };
}

function describeSource(job: Job): string {
  return job.source.kind === 'chat' ? `chat platform ${job.source.platform}` : `${job.source.kind} jobs`;
}
