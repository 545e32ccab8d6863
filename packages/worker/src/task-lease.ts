import type { Logger } from '@codefleet/log';
import type { Lease } from '@codefleet/queue';
import type { CancelRequests, TaskLeases } from '@codefleet/store';
import type { RunningJob } from './cancellation.js';

/** Task leases in the shared run store, and how long one lives without a renewal. */
export interface TaskLeaseOptions {
  store: TaskLeases & Partial<CancelRequests>;
  ttlMs: number;
}

/** The worker's hold on one claimed job: its queue lease and, with task leases, its task. */
export interface LeaseHold {
  /**
   * Every `heartbeatMs` until the returned stop is called: extends the queue lease, renews
   * the task lease and looks for a cancel request. A lease found lost stops the job.
   */
  keepAlive(job: RunningJob, heartbeatMs: number): () => void;
  /**
   * After settling, so the task is never free while its queue lease still runs: releases
   * the task lease, or hands it to `next` (the job the ack claimed) in one store call.
   * Resolves whether `next` holds its task lease (undefined: not known, take it again).
   */
  pass(next: Lease | undefined): Promise<boolean | undefined>;
}

/**
 * Takes the task lease of `lease`'s job (at most one running job per task key across the
 * fleet; its token fences publishing), unless it was `handedOver` already. Resolves
 * undefined when another delivery of the task holds it. Without `leases` (tests of the loop
 * alone) only the queue lease guards a job.
 */
export async function holdLeases(
  lease: Lease,
  leases: TaskLeaseOptions | undefined,
  log: Logger,
  handedOver?: boolean,
): Promise<LeaseHold | undefined> {
  const taskKey = lease.job.idempotency_key;
  if (leases && !(handedOver ?? (await leases.store.acquire(taskKey, lease.token, leases.ttlMs).catch(() => false))))
    return undefined;
  const releaseFailed = (err: unknown) => {
    log.warn({ err, event: 'task_lease.release_failed' }, 'could not release the task lease');
    return undefined;
  };
  return {
    keepAlive: (job, heartbeatMs) => {
      const timer = setInterval(() => {
        lease.heartbeat().catch(job.lost);
        job.pollCancel();
        leases?.store.renew(taskKey, lease.token, leases.ttlMs).then(
          (ours) => {
            if (!ours) job.lost(new Error(`task lease on ${taskKey} was taken over`));
          },
          // The store unreachable for a moment is not a lost lease; the fence decides at publish.
          (err: unknown) => log.warn({ err, event: 'task_lease.renew_failed' }, 'could not renew the task lease'),
        );
      }, heartbeatMs);
      return () => clearInterval(timer);
    },
    pass: async (next) => {
      if (!leases) return undefined;
      if (!next) {
        await leases.store.release(taskKey, lease.token).catch(releaseFailed);
        return undefined;
      }
      const to = { taskKey: next.job.idempotency_key, token: next.token };
      return leases.store.handOver({ taskKey, token: lease.token }, to, leases.ttlMs).catch(releaseFailed);
    },
  };
}
