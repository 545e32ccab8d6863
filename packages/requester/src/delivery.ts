import { CodefleetError } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import { finalReports, type Report, type Requester } from './port.js';

/**
 * How long a report may take, its platform's own retries included, before it is given up:
 * long enough for a slow answer and a retry or two, short enough that a silent platform
 * holds a finished job for seconds, not minutes.
 */
export const defaultReportDeadlineMs = 30_000;

/**
 * The least time between two progress reports of one job. A chat platform allows about one
 * edit a second per channel (Slack's chat.update), and stages that pass faster than this
 * are not worth an edit each: the newest waiting is sent when the gap is over.
 */
const defaultProgressGapMs = 2_000;

/** How {@link reportSafely} delivers one report. */
export interface ReportDelivery {
  /** How long the report may take, the platform's retries included; default {@link defaultReportDeadlineMs}. */
  deadlineMs?: number;
  /** Aborts the report early (shutdown); it then counts as missed, like one past its deadline. */
  signal?: AbortSignal;
  /**
   * Called with the error when a final report is given up (refused, failed, or past its
   * deadline), so it can be recorded (the run store's journal) for someone to deliver by
   * hand. Its own failure is logged.
   */
  onGiveUp?: (error: unknown) => Promise<void>;
}

/** Validates a deadline once, where it is read, so a bad value fails loudly rather than never firing. */
function deadlineOf(deadlineMs: number | undefined): number {
  const ms = deadlineMs ?? defaultReportDeadlineMs;
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`a report deadline must be a positive number, got ${ms}`);
  return ms;
}

/** Rejects when `signal` aborts: a call that never answers is left behind, not waited for. */
function untilAborted(signal: AbortSignal, what: string): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () =>
      reject(
        new CodefleetError('network', `${what}: no answer before the report's deadline or shutdown`, {
          verdict: 'transient',
        }),
      );
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
}

/**
 * Sends a report as best effort: one try under a deadline, whose failure is logged with the
 * report's kind and never thrown, since telling the requester must not change the job's
 * outcome. The one retry layer is the platform's (its client's outbound policy), inside the
 * deadline; trying again here would multiply it. The deadline's signal reaches the adapter,
 * and past it the call is abandoned. A final report (finished, answered, failed, cancelled)
 * that is given up goes to `onGiveUp`. `before` runs before the try (the fence).
 */
export async function reportSafely(
  requester: Requester,
  report: Report,
  log: Logger,
  before?: () => Promise<void>,
  delivery: ReportDelivery = {},
): Promise<boolean> {
  return startReport(requester, report, log, before, delivery).delivered;
}

/**
 * {@link reportSafely}, also handing back the adapter's call itself: `settled` resolves when
 * that call ends, however it ends, which can be after the deadline gave up on it (a client
 * that takes no signal stops at its own request timeout).
 */
function startReport(
  requester: Requester,
  report: Report,
  log: Logger,
  before: (() => Promise<void>) | undefined,
  delivery: ReportDelivery,
): { delivered: Promise<boolean>; settled: Promise<unknown> } {
  const deadline = AbortSignal.timeout(deadlineOf(delivery.deadlineMs));
  const signal = delivery.signal === undefined ? deadline : AbortSignal.any([delivery.signal, deadline]);
  const sending = (async () => {
    await before?.();
    await requester.report(report, signal);
  })();
  // The abandoned call may still fail later: that failure is already accounted for.
  const settled = sending.catch(() => {});
  const delivered = (async () => {
    try {
      await Promise.race([sending, untilAborted(signal, `the ${report.kind} report`)]);
      return true;
    } catch (err) {
      log.warn(
        { err, event: 'report.failed', job_id: report.job.id, report: report.kind },
        `could not send the ${report.kind} report`,
      );
      if (finalReports.includes(report.kind)) {
        await delivery
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
  })();
  return { delivered, settled };
}

/** What {@link jobReporter} needs besides the requester. */
export interface JobReporterOptions extends Omit<ReportDelivery, 'onGiveUp'> {
  log: Logger;
  /** Runs before each report (the fence of publishing writes). */
  before?: () => Promise<void>;
  /** The least time between two progress reports of the job; default {@link defaultProgressGapMs}. */
  progressGapMs?: number;
  /** A final report given up, with the error: see {@link ReportDelivery.onGiveUp}. */
  onGiveUp?: (report: Report, error: unknown) => Promise<void>;
}

/** Tells the requester about one job. */
export interface JobReporter {
  /**
   * A progress report (`queued`, `started`, `progress`) returns at once: it is sent in the
   * background, at most one in flight and one per gap, and a newer one replaces one still
   * waiting (latest wins). A final report waits for the one in flight (within its
   * deadline), drops any waiting, and resolves once delivered or given up; nothing is sent
   * after it.
   */
  tell(report: Report): Promise<void>;
}

/**
 * The reports of one job, so that the job never waits for a progress edit: a slow or
 * rate-limited platform costs the thread some intermediate states, never the job's time.
 * Only the final report is awaited, under its deadline.
 */
export function jobReporter(requester: Requester, options: JobReporterOptions): JobReporter {
  const gapMs = options.progressGapMs ?? defaultProgressGapMs;
  let inFlight: Promise<unknown> | undefined;
  let waiting: Report | undefined;
  let gap: ReturnType<typeof setTimeout> | undefined;
  let ended = false;
  const limits = {
    ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  };
  const next = () => {
    gap = undefined;
    const report = waiting;
    waiting = undefined;
    if (report === undefined || ended) inFlight = undefined;
    else pump(report);
  };
  // In flight until the adapter's call has ended, not only until the deadline gave up on it:
  // a silent platform gets one call per job, not one per stage piling up behind it.
  const pump = (report: Report) => {
    inFlight = startReport(requester, report, options.log, options.before, limits).settled.finally(() => {
      // The slot stays taken for the gap, so stages that pass faster cost one edit, not one each.
      if (waiting === undefined || gapMs === 0) next();
      else {
        gap = setTimeout(next, gapMs);
        // A progress edit is not worth keeping a finished process alive for.
        gap.unref?.();
      }
    });
  };
  return {
    async tell(report) {
      if (ended) return;
      if (!finalReports.includes(report.kind)) {
        if (inFlight === undefined && gap === undefined) pump(report);
        else waiting = report;
        return;
      }
      ended = true;
      waiting = undefined;
      clearTimeout(gap);
      // The edit in flight lands first, so it cannot overwrite the final status; waiting for
      // it spends the final report's deadline, so a silent platform costs one deadline in all.
      const deadlineMs = deadlineOf(options.deadlineMs);
      const started = Date.now();
      if (inFlight !== undefined) {
        const wait = AbortSignal.timeout(deadlineMs);
        await Promise.race([inFlight, untilAborted(wait, 'the report in flight')]).catch(() => {});
      }
      await reportSafely(requester, report, options.log, options.before, {
        ...limits,
        deadlineMs: Math.max(1, deadlineMs - (Date.now() - started)),
        onGiveUp: async (error) => options.onGiveUp?.(report, error),
      });
    },
  };
}
