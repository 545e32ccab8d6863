import type { Logger } from '@codefleet/log';
import type { JobResult } from '@codefleet/pipeline';
import { settleLease, type Lease, type Settlement } from '@codefleet/queue';
import type { WorkerEvents } from './monitor.js';

/** Counts of what the worker did, for the CLI and tests. */
export interface WorkerSummary {
  processed: number;
  acked: number;
  retried: number;
  deadLettered: number;
  released: number;
}

const settledCounter: Record<Settlement, keyof Omit<WorkerSummary, 'processed'>> = {
  acked: 'acked',
  retried: 'retried',
  dead_lettered: 'deadLettered',
  released: 'released',
};

/** What settling needs besides the lease and the result. */
export interface SettleContext {
  summary: WorkerSummary;
  log: Logger;
  events?: WorkerEvents | undefined;
  /**
   * Whether the ack may claim the slot's next job (see WorkerOptions.fetchNext); asked only
   * for an ack on a queue that can, so the day-budget gate is read only then.
   */
  fetchNext: () => Promise<boolean>;
}

/**
 * Settles `lease` by the pipeline's `result` (no result: the pipeline threw, so the job is
 * retried) and counts it. When the result is an ack and `fetchNext` allows it, the ack also
 * claims the slot's next job in the same round trip (`Lease.ackAndClaim`, BullMQ's
 * fetch-next): resolves that job, which the slot runs next. A settle that fails (the lease
 * was lost: another worker owns the job now, its result wins) is logged and counted as
 * `settle_failed`.
 */
export async function settle(
  lease: Lease,
  result: JobResult | undefined,
  context: SettleContext,
): Promise<Lease | undefined> {
  const { summary, log, events } = context;
  summary.processed += 1;
  let next: Lease | undefined;
  try {
    let settled: Settlement;
    if (result?.action === 'ack' && lease.ackAndClaim && (await context.fetchNext())) {
      next = await lease.ackAndClaim();
      if (next) events?.claimSucceeded();
      settled = 'acked';
    } else {
      settled = await settleLease(lease, result);
    }
    summary[settledCounter[settled]] += 1;
    events?.jobSettled(settled, result?.run, lease.attempt);
    log.info({ event: 'job.settled', action: result?.action ?? 'retry' }, 'settled');
  } catch (err) {
    events?.jobSettled('settle_failed', result?.run, lease.attempt);
    log.warn({ err, event: 'lease.settle_failed' }, 'could not settle the lease');
  }
  return next;
}
