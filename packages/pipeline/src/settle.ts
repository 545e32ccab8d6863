import type { Lease } from '@codefleet/queue';
import type { JobResult } from './run-job.js';

/** What became of a lease once settled. */
export type Settlement = 'acked' | 'retried' | 'dead_lettered' | 'released';

/** Backoff for a delivery whose pipeline threw instead of returning a result (a bug, not the job's fault). */
export const internalErrorRetryMs = 10_000;

/**
 * Settles a lease by the pipeline's verdict: ack, delayed retry (dead-lettered by the
 * queue once attempts are spent), dead letter with the reason, or release untouched.
 * `undefined` means the pipeline itself threw: the job is retried later, never dropped.
 * Rejects with `lease_lost` when another worker owns the job by now.
 */
export async function settleLease(lease: Lease, result: JobResult | undefined): Promise<Settlement> {
  if (!result) {
    const what = await lease.retry({ delayMs: internalErrorRetryMs, reason: 'internal error in the pipeline' });
    return what === 'retrying' ? 'retried' : 'dead_lettered';
  }
  switch (result.action) {
    case 'ack':
      await lease.ack();
      return 'acked';
    case 'retry': {
      const what = await lease.retry({ delayMs: result.delayMs, reason: result.reason });
      return what === 'retrying' ? 'retried' : 'dead_lettered';
    }
    case 'dead_letter':
      await lease.deadLetter(result.reason);
      return 'dead_lettered';
    case 'release':
      await lease.release();
      return 'released';
  }
}
