import type { Lease } from './port.js';

/**
 * What to do with a claimed job once its run is over; the pipeline's result is one of
 * these (with the run record beside it).
 */
export type LeaseVerdict =
  | { action: 'ack' }
  | { action: 'retry'; delayMs: number; reason: string }
  | { action: 'dead_letter'; reason: string }
  /** Stopped from outside (shutdown, lease lost): give the job back untouched. */
  | { action: 'release' };

/** What became of a lease once settled. */
export type Settlement = 'acked' | 'retried' | 'dead_lettered' | 'released';

/** Backoff for a delivery whose pipeline threw instead of returning a result (a bug, not the job's fault). */
export const internalErrorRetryMs = 10_000;

/**
 * Settles a lease by the run's verdict: ack, delayed retry (dead-lettered by the
 * queue once attempts are spent), dead letter with the reason, or release untouched.
 * `undefined` means the pipeline itself threw: the job is retried later, never dropped.
 * Rejects with `lease_lost` when another worker owns the job by now.
 */
export async function settleLease(lease: Lease, result: LeaseVerdict | undefined): Promise<Settlement> {
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
