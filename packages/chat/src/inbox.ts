import { createHash } from 'node:crypto';
import { classify, CodefleetError, createJob, maxBackoffDelayMs, maxBodyChars, type Job } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import { processUntilAborted, type Lease, type Queue } from '@codefleet/queue';
import { z } from 'zod';

/**
 * The chat inbox: a Slack or LINE event recorded durably before the platform is answered,
 * as the GitHub webhook records its deliveries (`@codefleet/github`), and acted on from the
 * record. Neither platform re-sends an event it had an answer for, so the record is what
 * keeps a message whose process died before it was queued. The record is the event as
 * the platform sent it, reduced to what its producer reads; the producer's `handle` must
 * be safe to run again on the same record (a process killed mid-way leaves it claimed,
 * and it is handed out again when the lease runs out).
 */

/** A recorded event as read back. */
export interface InboxEntry {
  /** `slack`, `line`. */
  platform: string;
  /** The platform's id of the event (a Slack channel + ts, a LINE webhookEventId): recording it twice is one record. */
  key: string;
  /** The producer's own reduction of the event (JSON). */
  event: unknown;
  /** When it was first recorded (ISO 8601). */
  receivedAt: string;
}

/** The placeholder repository of a record: a job needs one, an inbox record is about none yet. */
const inboxRepo = 'codefleet/chat-inbox';

const bodySchema = z.object({
  v: z.literal(1),
  platform: z.string().min(1).max(20),
  key: z.string().min(1).max(300),
  event: z.unknown(),
});

/**
 * An event as a queue record: the job id and idempotency key come from the platform and
 * the event's key, so a redelivery while the first is pending is the same record. An
 * event too large for a record is refused (`invalid_job`): the platform gets an error
 * answer and nothing was promised.
 */
export function inboxJob(platform: string, key: string, event: unknown, now: Date): Job {
  const digest = createHash('sha256').update(`${platform}\u0000${key}`).digest('hex').slice(0, 40);
  const body = JSON.stringify({ v: 1, platform, key, event });
  if (body.length > maxBodyChars) {
    throw new CodefleetError(
      'invalid_job',
      `${platform} event ${key.slice(0, 100)} is too large to record (${body.length} characters)`,
      { verdict: 'permanent' },
    );
  }
  return createJob(
    {
      id: `inbox-${digest}`,
      idempotency_key: `chat-inbox:${platform}:${digest}`,
      repo: inboxRepo,
      source: { kind: 'record', of: 'chat-inbox' },
      title: `${platform} event ${key}`.slice(0, 256),
      body,
      requested_by: platform,
    },
    { id: `inbox-${digest}`, now },
  );
}

/** Reads a record back; `invalid_job` (permanent) when it is not one {@link inboxJob} wrote. */
export function inboxEntryOf(job: Job): InboxEntry {
  let parsed: unknown;
  try {
    parsed = JSON.parse(job.body);
  } catch {
    throw new CodefleetError('invalid_job', `record ${job.id} is not a chat inbox record (its body is not JSON)`, {
      verdict: 'permanent',
    });
  }
  const checked = bodySchema.safeParse(parsed);
  if (!checked.success)
    throw new CodefleetError('invalid_job', `record ${job.id} is not a chat inbox record`, { verdict: 'permanent' });
  return {
    platform: checked.data.platform,
    key: checked.data.key,
    event: checked.data.event,
    receivedAt: job.created_at,
  };
}

/** Settings of {@link createInbox}. */
export interface InboxOptions {
  /** The queue events are recorded in: one of the platform's own (`<queue.name>-<platform>-inbox`), never the jobs' queue. */
  queue: Queue;
  platform: string;
  /**
   * Acts on one recorded event. Runs again on the same entry after a crash or a transient
   * failure (`attempt` > 1), so it must converge: claim, find what was already done, finish the rest.
   */
  handle(entry: InboxEntry, attempt: number): Promise<void>;
  log: Logger;
  workerId?: string;
  /** How long after receipt an event is still retried (default 1 h: a chat answer later than that is no answer). */
  giveUpAfterMs?: number;
  /** The wait before try `attempt + 1` (default 2 s doubling up to a minute). */
  retryDelayMs?: (attempt: number) => number;
  now?: () => number;
}

/** What processing one record did. */
export interface ProcessedEntry {
  recordId: string;
  settled: 'acked' | 'retrying' | 'dead_lettered';
  reason?: string;
}

/** A platform's inbox: record on receipt, act from the record. */
export interface Inbox {
  /** Records an event; resolves once it is durable (then, and only then, answer the platform). */
  record(key: string, event: unknown): Promise<{ deduplicated: boolean }>;
  /** Claims the next recorded event (waiting up to `waitMs`) and acts on it. */
  processNext(options?: { waitMs?: number; signal?: AbortSignal }): Promise<ProcessedEntry | undefined>;
  /** Processes records until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

/** 2 s, doubling up to a minute: a chat user waits for the answer. */
export function inboxRetryDelayMs(attempt: number): number {
  return maxBackoffDelayMs(
    { strategy: 'exponential', baseMs: 2_000, maxMs: 60_000, jitter: false },
    Math.max(attempt, 1),
  );
}

/**
 * The inbox of one platform. A record is acked once `handle` resolved; a transient failure
 * keeps it for a later try; a permanent one, or a transient one past `giveUpAfterMs`, is
 * dead-lettered with its reason and logged as an error (the handler tells the sender what
 * it can before it throws).
 */
export function createInbox(options: InboxOptions): Inbox {
  const { queue, platform, log } = options;
  const now = options.now ?? Date.now;
  const giveUpAfterMs = options.giveUpAfterMs ?? 60 * 60_000;
  const delayOf = options.retryDelayMs ?? inboxRetryDelayMs;
  const workerId = options.workerId ?? `${platform}-inbox-${process.pid}`;

  const deadLetter = async (lease: Lease, reason: string): Promise<ProcessedEntry> => {
    await lease.deadLetter(reason);
    log.error(
      { event: 'chat.inbox_dead_lettered', platform, record: lease.job.id, reason },
      `a recorded ${platform} event was given up; kept in the dead letter`,
    );
    return { recordId: lease.job.id, settled: 'dead_lettered', reason };
  };

  const handle = async (lease: Lease): Promise<ProcessedEntry> => {
    let entry: InboxEntry;
    try {
      entry = inboxEntryOf(lease.job);
    } catch (error) {
      return deadLetter(lease, classify(error).message);
    }
    try {
      await options.handle(entry, lease.attempt);
    } catch (error) {
      const c = classify(error);
      const reason = `${c.code}: ${c.message}`;
      const delayMs = delayOf(lease.attempt);
      if (c.verdict !== 'transient' || now() + delayMs - Date.parse(entry.receivedAt) > giveUpAfterMs)
        return deadLetter(lease, reason);
      log.warn(
        {
          event: 'chat.inbox_retrying',
          platform,
          record: lease.job.id,
          attempt: lease.attempt,
          delay_ms: delayMs,
          err: error,
        },
        `a recorded ${platform} event failed; trying again later`,
      );
      const settled = await lease.retry({ delayMs, reason });
      return settled === 'dead_lettered'
        ? { recordId: lease.job.id, settled, reason }
        : { recordId: lease.job.id, settled: 'retrying', reason };
    }
    await lease.ack();
    return { recordId: lease.job.id, settled: 'acked' };
  };

  const processNext: Inbox['processNext'] = async (opts = {}) => {
    const lease = await queue.claim({
      workerId,
      waitMs: opts.waitMs ?? 0,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    return lease ? handle(lease) : undefined;
  };

  return {
    async record(key, event) {
      const result = await queue.enqueue(inboxJob(platform, key, event, new Date(now())));
      log.info(
        { event: 'chat.inbox_recorded', platform, record: result.id, deduplicated: result.deduplicated },
        `${platform} event recorded`,
      );
      return { deduplicated: result.deduplicated };
    },
    processNext,
    run: (signal) =>
      processUntilAborted(signal, processNext, (error) =>
        log.error(
          { err: error, event: 'chat.inbox_process_failed', platform },
          `processing a recorded ${platform} event failed; the record is kept`,
        ),
      ),
  };
}
