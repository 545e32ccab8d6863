import type { Redis } from 'ioredis';
import { LeaseLostError, type Job } from '@codefleet/core';
import type { Lease } from '../port.js';
import type { BullmqQueueSettings } from '../settings.js';
import type { BullJob, BullQueue } from './bull-classes.js';
import { isLockLost } from './ids.js';
import { slotGroups, type SlotGroup } from '../concurrency.js';
import type { RedisSlots } from '../redis-slots.js';

/** What a lease uses of the `BullmqQueue` that claimed it. */
export interface LeaseSide {
  settings: Pick<BullmqQueueSettings, 'maxAttempts' | 'leaseMs' | 'limits'>;
  producer: Redis;
  queue: BullQueue;
  /** True once the queue is closing: an ack then fetches no next job. */
  closed: () => boolean;
  /** Admits the job a completion script fetched, as a claim would. */
  admitNext: (next: unknown, lockToken: string) => Promise<Lease | undefined>;
  /** The concurrency slots the claim took, under the lease's token; absent before any claim. */
  slots: RedisSlots | undefined;
  /** Brings forward a job each of `groups` holds, now that this lease's slots are free. */
  wake: (groups: SlotGroup[]) => Promise<void> | undefined;
}

/**
 * The lease on a fetched job held under `lockToken`: its settle verbs move the BullMQ job
 * under that lock. Its concurrency slots (held under `token`) are renewed by heartbeats
 * and freed once it is settled, or tried to be: a lease that lost its job holds no slot.
 */
export function bullmqLease(
  side: LeaseSide,
  fetched: BullJob,
  lockToken: string,
  job: Job,
  attempt: number,
  token: string,
): Lease {
  const { maxAttempts, leaseMs } = side.settings;
  const groups = slotGroups(job, side.settings.limits);
  const lost = (error: unknown) => lostOr(job.id, error);
  let expiresAt = Date.now() + leaseMs;
  let settled = false;
  const settle = async <T>(fn: () => Promise<T>): Promise<T> => {
    if (settled) throw new LeaseLostError(job.id, `lease on job ${job.id} was already settled`);
    try {
      const result = await fn().catch(lost);
      settled = true;
      return result;
    } finally {
      // Unfreed (Redis gone), the slot still ends when its lease would have.
      await side.slots?.release(groups, token).catch(() => undefined);
      if (groups.length > 0) await side.wake(groups)?.catch(() => undefined);
    }
  };
  return {
    job,
    attempt,
    maxAttempts,
    token,
    get expiresAt() {
      return expiresAt;
    },
    heartbeat: async () => {
      if (settled) throw new LeaseLostError(job.id, `lease on job ${job.id} was already settled`);
      const extended = await fetched.extendLock(lockToken, leaseMs).catch(lost);
      if (!extended)
        throw new LeaseLostError(
          job.id,
          `lease on job ${job.id} was lost: the lock expired or another claimer took it over`,
        );
      expiresAt = Date.now() + leaseMs;
      await side.slots?.renew(groups, token, leaseMs);
    },
    ack: () =>
      settle(async () => {
        await fetched.moveToCompleted('done', lockToken, false);
      }),
    ackAndClaim: async () => {
      // The completion script moves the next job to active under the same lock token,
      // as BullMQ's own worker does: one round trip instead of two.
      const next = await settle(() => fetched.moveToCompleted('done', lockToken, !side.closed()));
      return side.admitNext(next, lockToken);
    },
    retry: ({ delayMs, reason }) =>
      settle(async () => {
        if (attempt >= maxAttempts) {
          await fetched.moveToFailed(
            new Error(`attempts exhausted (${attempt} of ${maxAttempts}): ${reason}`),
            lockToken,
            false,
          );
          return 'dead_lettered' as const;
        }
        await fetched.moveToDelayed(Date.now() + Math.max(0, delayMs), lockToken);
        return 'retrying' as const;
      }),
    deadLetter: (reason) =>
      settle(async () => {
        await fetched.moveToFailed(new Error(reason), lockToken, false);
      }),
    release: () => settle(() => releaseUnspent(side, fetched, lockToken)),
  };
}

/** `error` as a `lease_lost` when BullMQ refused a move because the lock is no longer ours. */
function lostOr(jobId: string, error: unknown): never {
  if (isLockLost(error))
    throw new LeaseLostError(jobId, `lease on job ${jobId} was lost: another claimer took it over or it was settled`);
  throw error;
}

/**
 * Back to wait without spending an attempt. BullMQ counts every activation, so the count is
 * given back while the lock is still ours, and taken again if the move fails.
 */
async function releaseUnspent(side: LeaseSide, fetched: BullJob, lockToken: string): Promise<void> {
  const key = side.queue.toKey(fetched.id ?? '');
  await side.producer.hincrby(key, 'ats', -1);
  try {
    await fetched.moveToWait(lockToken);
  } catch (error) {
    await side.producer.hincrby(key, 'ats', 1);
    throw error;
  }
}
