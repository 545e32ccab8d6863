import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import { Redis } from 'ioredis';
import { CodefleetError, parseJob, parseJobJson, redactUrlCredentials, type Job } from '@codefleet/core';
import type {
  ClaimOptions,
  DeadLetter,
  CancelPendingResult,
  DropResult,
  EnqueueResult,
  Lease,
  PendingJob,
  Queue,
  QueueStats,
  RedriveResult,
} from '../port.js';
import type { SqsQueueSettings } from '../settings.js';
import { RedisAccessWatch } from '../redis-access.js';
import { Coordination } from './coordination.js';
import { dropDeadLetter, listDeadLetters, redriveDeadLetter, type DeadLetterSide } from './dead-letters.js';
import { maxVisibilitySeconds, sqsLease, type LeaseSide } from './lease.js';
import { RedrivePolicyQueue } from './redrive-queue.js';
import { sqsStats } from './stats.js';
import { sqsPending } from './pending.js';
import { defaultAgingMs, holdRecheckMs, slotGroups, type HeldBy } from '../concurrency.js';
import { RedisSlots } from '../redis-slots.js';

/**
 * SQS's message size limit as this adapter enforces it: the classic 256 KiB, which every
 * region and emulator accepts. A job is its id and task text, far below it; a bigger one
 * is refused at enqueue with `payload_too_large` instead of failing inside SQS.
 */
export const maxMessageBytes = 256 * 1024;
const rawLimit = 4_096;

/**
 * The queue port on AWS SQS, for the cloud. Long polling (up to 20 s) receives a message;
 * its visibility timeout is the lease, extended by heartbeats (`ChangeMessageVisibility`).
 * What SQS cannot do by itself lives in Redis ({@link Coordination}): dedup by
 * idempotency key, lease tokens (an old receipt handle may still delete a message, so a
 * stale worker is fenced by its token), attempts, completed count and dead letters.
 *
 * A transient retry re-sends the message with `DelaySeconds` (so it counts as delayed)
 * and then deletes the old one; a crash in between leaves a duplicate message, which may
 * run the job once more (at-least-once, as the port says; a finished job's duplicate is
 * dropped at claim, and task leases keep it to one PR). A FIFO queue gets `MessageGroupId` per
 * repository and the job id as deduplication id.
 */
export class SqsQueue implements Queue {
  readonly backend = 'sqs' as const;
  readonly #settings: SqsQueueSettings;
  readonly #sqs: SQSClient;
  readonly #redis: Redis;
  /** A wrong or missing coordination password fails calls at once instead of waiting forever. */
  readonly #access: RedisAccessWatch;
  readonly #coord: Coordination;
  readonly #leaseSeconds: number;
  readonly #dlq: RedrivePolicyQueue | undefined;
  readonly #slots: RedisSlots;
  /** Whether the longest-waiting job has waited an aging step, and when that was last read. */
  #aged = { at: 0, due: false };
  #closed = false;
  readonly #closing = new AbortController();

  constructor(settings: SqsQueueSettings) {
    if (!(settings.leaseMs >= 1_000))
      throw new RangeError(`leaseMs must be at least 1000 (SQS counts whole seconds), got ${settings.leaseMs}`);
    if (!Number.isInteger(settings.maxAttempts) || settings.maxAttempts < 1) {
      throw new RangeError(`maxAttempts must be a positive integer, got ${settings.maxAttempts}`);
    }
    if (settings.fifo && !settings.queueUrl.endsWith('.fifo'))
      throw new RangeError(`a FIFO queue URL ends in .fifo, got ${settings.queueUrl}`);
    this.#settings = settings;
    this.#leaseSeconds = Math.min(maxVisibilitySeconds, Math.ceil(settings.leaseMs / 1_000));
    this.#sqs = new SQSClient({
      region: settings.region,
      ...(settings.endpoint === undefined ? {} : { endpoint: settings.endpoint }),
      ...(settings.credentials === undefined ? {} : { credentials: settings.credentials }),
    });
    this.#redis = new Redis(settings.coordinationUrl, { maxRetriesPerRequest: null, disconnectTimeout: 200 });
    this.#redis.on('error', () => undefined);
    this.#access = new RedisAccessWatch(settings.coordinationUrl, 'queue.sqs.coordination_url');
    this.#access.watch(this.#redis);
    this.#coord = new Coordination(this.#redis, settings.prefix, settings.name);
    this.#slots = new RedisSlots(this.#redis, `${settings.prefix}:${settings.name}:slots:`);
    this.#dlq =
      settings.deadLetterQueueUrl === undefined
        ? undefined
        : new RedrivePolicyQueue(this.#sqs, settings.deadLetterQueueUrl);
  }

  async enqueue(input: Job): Promise<EnqueueResult> {
    const job = parseJob(input);
    const body = JSON.stringify(job);
    const bytes = Buffer.byteLength(body);
    if (bytes > maxMessageBytes) {
      throw new CodefleetError(
        'payload_too_large',
        `job ${job.id} is ${bytes} bytes as a message; SQS takes at most ${maxMessageBytes} (shorten the task text)`,
        { verdict: 'permanent' },
      );
    }
    const active = await this.#access.guard(this.#coord.reserve(job.id, job.idempotency_key, Date.now()));
    if (active !== undefined) return { id: active, deduplicated: true };
    try {
      await this.#send(job, body, 0);
    } catch (error) {
      await this.#coord.unreserve(job.id, job.idempotency_key).catch(() => undefined);
      throw this.#unavailable(error);
    }
    await this.#coord.pending(job.id, Date.now(), job);
    return { id: job.id, deduplicated: false };
  }

  /** Sends a payload as is, skipping validation: what a foreign producer could do (tests). */
  async injectRaw(payload: string): Promise<void> {
    await this.#sqs.send(
      new SendMessageCommand({
        QueueUrl: this.#settings.queueUrl,
        MessageBody: payload,
        ...(this.#settings.fifo ? { MessageGroupId: 'raw', MessageDeduplicationId: randomUUID() } : {}),
      }),
    );
  }

  async claim(options: ClaimOptions): Promise<Lease | undefined> {
    const deadline = Date.now() + Math.max(0, options.waitMs ?? 0);
    const signal =
      options.signal === undefined ? this.#closing.signal : AbortSignal.any([options.signal, this.#closing.signal]);
    for (;;) {
      if (this.#closed || signal.aborted) return undefined;
      if (this.#access.refused && this.#redis.status !== 'ready') throw this.#access.refused;
      const left = deadline - Date.now();
      // Long polling in whole seconds (SQS's unit); the last fraction of a second is polled.
      const waitSeconds = Math.min(this.#settings.waitTimeSeconds ?? 20, Math.max(0, Math.floor(left / 1_000)));
      let received: { message: Message; queueUrl: string } | undefined;
      try {
        // High-priority jobs first, from their own queue (SQS has no priority): a short
        // poll there, then the long poll on the main queue; the main queue first once the
        // longest-waiting job has waited an aging step, so a stream of high jobs starves none.
        const { priorityQueueUrl, queueUrl } = this.#settings;
        if (priorityQueueUrl !== undefined) {
          if (await this.#agingDue()) received = await this.#receive(queueUrl, 0, signal);
          received ??= await this.#receive(priorityQueueUrl, 0, signal);
        }
        received ??= await this.#receive(queueUrl, waitSeconds, signal);
      } catch (error) {
        if (signal.aborted) return undefined;
        throw this.#unavailable(error);
      }
      if (received) {
        const lease = await this.#admit(received.message, received.queueUrl);
        if (lease) return lease;
        continue;
      }
      if (Date.now() >= deadline) return undefined;
      if (waitSeconds === 0) {
        const aborted = await sleep(Math.min(this.#settings.pollMs ?? 200, Math.max(0, deadline - Date.now())), false, {
          signal,
        }).catch(() => true);
        if (aborted) return undefined;
      }
    }
  }

  async #receive(
    queueUrl: string,
    waitSeconds: number,
    signal: AbortSignal,
  ): Promise<{ message: Message; queueUrl: string } | undefined> {
    const received = await this.#sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 1,
        WaitTimeSeconds: waitSeconds,
        VisibilityTimeout: this.#leaseSeconds,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
      { abortSignal: signal },
    );
    const message = received.Messages?.[0];
    return message && { message, queueUrl };
  }

  /** Whether the oldest pending job has waited `agingMs`; read at most once a second per process. */
  async #agingDue(): Promise<boolean> {
    const now = Date.now();
    if (now - this.#aged.at >= 1_000) {
      const oldest = await this.#coord.oldestQueuedAt();
      this.#aged = { at: now, due: oldest !== undefined && now - oldest >= (this.#settings.agingMs ?? defaultAgingMs) };
    }
    return this.#aged.due;
  }

  /** Pending jobs from the coordination store; see {@link sqsPending}. */
  async pending(options: { limit?: number } = {}): Promise<PendingJob[]> {
    return this.#access.guard(sqsPending(this.#coord, options.limit ?? 100));
  }

  /**
   * Marks a pending job cancelled in the coordination store: the claim that receives its
   * message deletes it unrun. Until then SQS still counts the message (stats say ready).
   * Only the coordination store's record: SQS keeps no copy to give back.
   */
  async cancelPending(id: string): Promise<CancelPendingResult> {
    const cancelled = await this.#access.guard(this.#coord.cancel(id));
    return cancelled ? { status: 'cancelled', id } : { status: 'not_found' };
  }

  async stats(): Promise<QueueStats> {
    return sqsStats({
      settings: this.#settings,
      sqs: this.#sqs,
      coord: this.#coord,
      access: this.#access,
      unavailable: (error) => this.#unavailable(error),
    });
  }

  async deadLetters(options: { limit?: number } = {}): Promise<DeadLetter[]> {
    return listDeadLetters(this.#deadLetterSide(), options);
  }

  async redrive(id: string): Promise<RedriveResult> {
    return redriveDeadLetter(this.#deadLetterSide(), id);
  }

  /** A dead job of the coordination store, else a message the redrive policy moved (deleted from the dead-letter queue). */
  async drop(id: string): Promise<DropResult> {
    return dropDeadLetter(this.#deadLetterSide(), id);
  }

  #deadLetterSide(): DeadLetterSide {
    return {
      coord: this.#coord,
      dlq: this.#dlq,
      maxAttempts: this.#settings.maxAttempts,
      send: (job, body, delaySeconds, dedupSuffix) => this.#send(job, body, delaySeconds, dedupSuffix),
      injectRaw: (payload) => this.injectRaw(payload),
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort();
    this.#sqs.destroy();
    this.#redis.disconnect();
  }

  async #send(job: Job, body: string, delaySeconds: number, dedupSuffix = ''): Promise<void> {
    const fifo = this.#settings.fifo
      ? {
          MessageGroupId: groupOf(job.repo),
          MessageDeduplicationId: `${job.id}${dedupSuffix}`.replaceAll(':', '_').slice(0, 128),
        }
      : { DelaySeconds: delaySeconds };
    // A high-priority job goes to the priority queue when there is one; the rest, and a
    // retry of either, where its priority says.
    const queueUrl =
      job.priority === 'high' ? (this.#settings.priorityQueueUrl ?? this.#settings.queueUrl) : this.#settings.queueUrl;
    await this.#sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, ...fifo }));
  }

  /** Turns a message received from `queueUrl` into a lease, or buries or drops it. */
  async #admit(message: Message, queueUrl: string): Promise<Lease | undefined> {
    const remove = () => this.#remove(message, queueUrl);
    const { maxAttempts } = this.#settings;
    const now = Date.now();
    const body = message.Body ?? '';
    let job: Job;
    try {
      job = parseJobJson(body);
    } catch (error) {
      const reason = `malformed job: ${error instanceof Error ? error.message : String(error)}`;
      await this.#coord.settle(`msg-${message.MessageId ?? randomUUID()}`, '', 'dead', {
        reason,
        raw: body.slice(0, rawLimit),
        now,
      });
      await remove();
      return undefined;
    }
    const token = randomUUID();
    const claimed = await this.#access.guard(this.#coord.claim(job.id, token, maxAttempts, job.idempotency_key));
    if (claimed.verdict === 'settled') {
      // A duplicate of finished work (a delete that did not happen, a retry's twin).
      await remove();
      return undefined;
    }
    if (claimed.verdict === 'exhausted') {
      const reason = `lease expired on attempt ${claimed.attempts} of ${maxAttempts} (the worker stopped heartbeating); attempts exhausted`;
      await this.#coord.settle(job.id, '', 'dead', { reason, raw: body, now });
      await remove();
      return undefined;
    }
    const groups = slotGroups(job, this.#settings.limits);
    const full = await this.#slots.acquire(groups, token, this.#leaseSeconds * 1_000);
    if (full) {
      await this.#hold(message, queueUrl, { job, body, token }, full.held);
      return undefined;
    }
    return this.#lease(message, queueUrl, { job, body, token, attempt: claimed.attempts, now });
  }

  /**
   * Gives back a claimed job a full group holds: its coordination record as a release
   * leaves it (the attempt given back), and its message out of sight for a while. A
   * standard queue gets the message sent again with a delay and the received one deleted,
   * so SQS's receive count (its redrive policy) does not grow; a FIFO queue cannot delay
   * one message, so there the visibility timeout holds it and the receive counts.
   */
  async #hold(message: Message, queueUrl: string, claim: { job: Job; body: string; token: string }, held: HeldBy) {
    const { job, body, token } = claim;
    if (!(await this.#coord.settle(job.id, token, 'release', { now: Date.now() }))) return;
    await this.#coord.hold(job.id, JSON.stringify(held));
    const seconds = Math.ceil(holdRecheckMs / 1_000);
    if (this.#settings.fifo) {
      await this.#sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: queueUrl,
          ReceiptHandle: message.ReceiptHandle,
          VisibilityTimeout: seconds,
        }),
      );
      return;
    }
    await this.#send(job, body, seconds, `-h${Date.now().toString(36)}`);
    await this.#remove(message, queueUrl);
  }

  /** The lease on `message`'s claimed job; see {@link sqsLease}. */
  #lease(
    message: Message,
    queueUrl: string,
    claim: { job: Job; body: string; token: string; attempt: number; now: number },
  ): Lease {
    const side: LeaseSide = {
      settings: this.#settings,
      leaseSeconds: this.#leaseSeconds,
      sqs: this.#sqs,
      coord: this.#coord,
      send: (job, body, delaySeconds, dedupSuffix) => this.#send(job, body, delaySeconds, dedupSuffix),
      remove: (m, url) => this.#remove(m, url),
      slots: this.#slots,
    };
    return sqsLease(side, message, queueUrl, claim);
  }

  async #remove(message: Message, queueUrl: string): Promise<void> {
    await this.#sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }));
  }

  #unavailable(error: unknown): unknown {
    if (error instanceof CodefleetError) return error;
    const name = (error as { name?: string }).name ?? '';
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status !== undefined && status >= 400 && status < 500 && status !== 429) return error;
    const where = redactUrlCredentials(this.#settings.endpoint ?? this.#settings.queueUrl);
    return new CodefleetError(
      'queue_unavailable',
      `SQS at ${where} failed: ${name} ${(error as Error).message ?? ''}`.trim(),
      { verdict: 'transient', cause: error },
    );
  }
}

/** FIFO message group per repository: one job per repo at a time, in order. */
function groupOf(repo: string): string {
  return repo.replace(/[^A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g, '_').slice(0, 128) || 'default';
}
