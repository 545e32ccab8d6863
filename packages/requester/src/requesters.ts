import type { Job } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import { finalReports, type Report, type Requester } from './port.js';

/** The CLI's requester: the terminal that asked is watching the run itself. */
export const cliRequester: Requester = {
  kind: 'cli',
  handles: (job) => job.source.kind === 'cli',
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
    async report(report: Report): Promise<void> {
      const adapter = pick(report.job);
      if (adapter === undefined) {
        log?.warn(
          { event: 'report.no_requester', job_id: report.job.id, source: report.job.source.kind, report: report.kind },
          `no requester configured for ${describeSource(report.job)}: the ${report.kind} report was not sent`,
        );
        return;
      }
      await adapter.report(report);
    },
  };
}

/** How {@link reportSafely} tries a final report again. */
export interface ReportRetry {
  /** Tries of a final report whose failure is transient (network, rate limit, outage); default 3. */
  attempts?: number;
  /** Waits between tries; default a real timer. */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Called with the last error when a final report is given up, so it can be recorded
   * (the run store's journal) for someone to deliver by hand. Its own failure is logged.
   */
  onGiveUp?: (error: unknown) => Promise<void>;
}

/** Waits before the 2nd and 3rd try of a final report: a blip passes, an outage is not waited out. */
const retryDelaysMs = [2_000, 10_000];
const transientCodes = new Set(['network', 'rate_limited', 'forge_unavailable']);

/**
 * Sends a report as best effort: a failure is logged with the report's kind and never
 * thrown, since telling the requester must not change the job's outcome. A final report
 * (finished, answered, failed, cancelled) that fails for a transient reason is tried again
 * (`retry.attempts`, waiting 2 s, then 10 s, or what a rate limit asks up to a minute):
 * it is the one the requester must get. `before` runs before each try (the fence).
 */
export async function reportSafely(
  requester: Requester,
  report: Report,
  log: Logger,
  before?: () => Promise<void>,
  retry: ReportRetry = {},
): Promise<boolean> {
  const attempts = finalReports.includes(report.kind) ? Math.max(1, retry.attempts ?? 3) : 1;
  const sleep = retry.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 1; ; attempt += 1) {
    try {
      await before?.();
      await requester.report(report);
      return true;
    } catch (err) {
      const { code, retryAfterMs } = err as { code?: string; retryAfterMs?: number };
      const again = attempt < attempts && code !== undefined && transientCodes.has(code);
      log.warn(
        { err, event: 'report.failed', job_id: report.job.id, report: report.kind, attempt, will_retry: again },
        `could not send the ${report.kind} report`,
      );
      if (!again) {
        if (finalReports.includes(report.kind)) {
          await retry
            .onGiveUp?.(err)
            .catch((failed: unknown) =>
              log.warn(
                { err: failed, event: 'report.give_up_failed', job_id: report.job.id },
                'could not record the undelivered report',
              ),
            );
        }
        return false;
      }
      await sleep(Math.min(60_000, Math.max(retryAfterMs ?? 0, retryDelaysMs[attempt - 1] ?? 10_000)));
    }
  }
}

function describeSource(job: Job): string {
  return job.source.kind === 'chat' ? `chat platform ${job.source.platform}` : `${job.source.kind} jobs`;
}
