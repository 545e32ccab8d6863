import { ChangeMessageVisibilityCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { LeaseLostError, type Job } from '@codefleet/core';
import type { Lease } from '../port.js';
import type { SqsQueueSettings } from '../settings.js';
import type { Coordination } from './coordination.js';
import { slotGroups } from '../concurrency.js';
import type { RedisSlots } from '../redis-slots.js';

/** Per-message DelaySeconds cannot exceed 15 minutes; longer retries use the visibility timeout. */
const maxDelaySeconds = 900;
/** Upper bound of a visibility timeout in SQS: 12 hours. */
export const maxVisibilitySeconds = 43_200;

/** What a lease uses of the `SqsQueue` that claimed it. */
export interface LeaseSide {
  settings: Pick<SqsQueueSettings, 'maxAttempts' | 'fifo' | 'limits'>;
  /** The visibility timeout a claim and a heartbeat set. */
  leaseSeconds: number;
  sqs: SQSClient;
  coord: Coordination;
  send: (job: Job, body: string, delaySeconds: number, dedupSuffix?: string) => Promise<void>;
  remove: (message: Message, queueUrl: string) => Promise<void>;
  /** The concurrency slots the claim took under the lease's token: renewed by heartbeats, freed by settling. */
  slots: RedisSlots;
}

/** The lease on `message`'s claimed job: its settle verbs act on the coordination record and on the message. */
export function sqsLease(
  side: LeaseSide,
  message: Message,
  queueUrl: string,
  claim: { job: Job; body: string; token: string; attempt: number; now: number },
): Lease {
  const { job, body, token, attempt } = claim;
  const { maxAttempts } = side.settings;
  const remove = () => side.remove(message, queueUrl);
  const leaseMs = side.leaseSeconds * 1_000;
  let expiresAt = claim.now + leaseMs;
  const lost = () =>
    new LeaseLostError(job.id, `lease on job ${job.id} was lost: another claimer took it over or it was settled`);
  const groups = slotGroups(job, side.settings.limits);
  const settle = async (action: 'ack' | 'release' | 'dead' | 'retry', reason?: string) => {
    const details = { now: Date.now(), raw: body, ...(reason === undefined ? {} : { reason }) };
    const owned = await side.coord.settle(job.id, token, action, details);
    // Settled or lost, this lease holds no slot any more; unfreed (Redis gone), it still ends with the lease.
    await side.slots.release(groups, token).catch(() => undefined);
    if (!owned) throw lost();
  };
  const visibility = async (seconds: number) => {
    await side.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: message.ReceiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
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
      if (!(await side.coord.owns(job.id, token))) throw lost();
      // SQS refuses a receipt handle whose message was received again since: lost too.
      await visibility(side.leaseSeconds).catch(() => {
        throw lost();
      });
      expiresAt = Date.now() + leaseMs;
      await side.slots.renew(groups, token, leaseMs);
    },
    ack: async () => {
      await settle('ack');
      await remove();
    },
    retry: async ({ delayMs, reason }) => {
      if (attempt >= maxAttempts) {
        await settle('dead', `attempts exhausted (${attempt} of ${maxAttempts}): ${reason}`);
        await remove();
        return 'dead_lettered';
      }
      await settle('retry');
      const seconds = Math.ceil(Math.max(0, delayMs) / 1_000);
      if (seconds <= maxDelaySeconds && !side.settings.fifo) {
        // Re-sent first, deleted second: a crash in between duplicates, never loses.
        await side.send(job, body, seconds, `-r${attempt}`);
        await remove();
      } else {
        await visibility(Math.min(maxVisibilitySeconds, seconds));
      }
      return 'retrying';
    },
    deadLetter: async (reason) => {
      await settle('dead', reason);
      await remove();
    },
    release: async () => {
      await settle('release');
      await visibility(0);
    },
  };
}
