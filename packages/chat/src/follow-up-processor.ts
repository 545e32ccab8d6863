import { classify, maxBackoffDelayMs } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import { processUntilAborted, type Lease, type Queue } from '@codefleet/queue';
import { followUpJob, followUpOfJob, type Deferred, type FollowUpRecord } from './follow-up-record.js';
import type { ChatMessage, ChatOutcome, ChatService } from './port.js';

/** Settings of {@link createFollowUpProcessor}. */
export interface FollowUpProcessorOptions {
  /**
   * The queue kept follow-ups are recorded in: a queue of their own (`<queue.name>-chat-followups`),
   * never the jobs' queue, with a high attempt count (waiting out a job is many tries).
   */
  followUps: Queue;
  /** Hands a kept message to again; its `deferred` answer means "still waiting". */
  chat: ChatService;
  log: Logger;
  /**
   * Tells the sender what finally happened (the producer edits its status message): the
   * outcome of the message, or a refusal when it was given up. Errors are logged, not retried.
   */
  onOutcome(message: ChatMessage, outcome: ChatOutcome): Promise<void>;
  workerId?: string;
  /** How long after it was kept a follow-up still waits (default 24 h); then it is given up and said so. */
  giveUpAfterMs?: number;
  /** The wait before try `attempt + 1` (default {@link followUpDelayMs}). */
  retryDelayMs?: (attempt: number) => number;
  now?: () => number;
}

/** What processing one kept follow-up did. */
export interface ProcessedFollowUp {
  recordId: string;
  /** acked: handled and told; retrying: still waiting (or a failure), kept; dead_lettered: given up. */
  settled: 'acked' | 'retrying' | 'dead_lettered';
  outcome?: ChatOutcome;
  delayMs?: number;
  reason?: string;
}

/** Keeps deferred follow-ups and queues each once the job it waits for has ended. */
export interface FollowUpProcessor {
  /** Records a message the chat service answered `deferred`; the same message kept twice is one record. */
  defer(message: ChatMessage, deferred: Deferred): Promise<void>;
  /** Claims the next due follow-up (waiting up to `waitMs`) and hands it to the chat service again. */
  processNext(options?: { waitMs?: number; signal?: AbortSignal }): Promise<ProcessedFollowUp | undefined>;
  /** Processes follow-ups until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

const day = 24 * 60 * 60_000;

/** 10 s after the first try, doubling per try up to 5 minutes: a job runs minutes, not seconds. */
export function followUpDelayMs(attempt: number): number {
  return maxBackoffDelayMs(
    { strategy: 'exponential', baseMs: 10_000, maxMs: 5 * 60_000, jitter: false },
    Math.max(attempt, 1),
  );
}

/**
 * The follow-up processor: a message in the thread of a queued or running job is kept as a
 * record (never dropped: the producer already told the sender so) and handed to the chat
 * service again with backoff; once the job has ended the chat service queues it as the
 * follow-up on the job's branch, and the sender is told through `onOutcome`. A follow-up
 * still waiting a day after it was kept is dead-lettered with the reason and the sender is
 * told it was not started. The record is acked only after the sender was told.
 */
export function createFollowUpProcessor(options: FollowUpProcessorOptions): FollowUpProcessor {
  const { followUps, log } = options;
  const settings: Settings = {
    options,
    now: options.now ?? Date.now,
    giveUpAfterMs: options.giveUpAfterMs ?? day,
    delayOf: options.retryDelayMs ?? followUpDelayMs,
  };
  const workerId = options.workerId ?? `chat-followups-${process.pid}`;

  const processNext: FollowUpProcessor['processNext'] = async (opts = {}) => {
    const lease = await followUps.claim({
      workerId,
      waitMs: opts.waitMs ?? 0,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    return lease ? handleFollowUp(settings, lease) : undefined;
  };

  return {
    async defer(message, deferred) {
      const result = await followUps.enqueue(followUpJob(message, deferred, new Date(settings.now())));
      log.info(
        { event: 'chat.followup_kept', record: result.id, job_id: deferred.jobId, deduplicated: result.deduplicated },
        "kept a follow-up until its thread's job ends",
      );
    },
    processNext,
    run: (signal) =>
      processUntilAborted(signal, processNext, (error) =>
        log.error(
          { err: error, event: 'chat.followup_process_failed' },
          'processing a kept follow-up failed; the record is kept',
        ),
      ),
  };
}

/** What handling a kept follow-up reads: the processor's options and their defaults, resolved. */
interface Settings {
  options: FollowUpProcessorOptions;
  now: () => number;
  giveUpAfterMs: number;
  delayOf: (attempt: number) => number;
}

/** Reads the lease's record, hands its message to the chat service again and settles the lease. */
async function handleFollowUp(settings: Settings, lease: Lease): Promise<ProcessedFollowUp> {
  const { log, chat } = settings.options;
  let record: FollowUpRecord;
  try {
    record = followUpOfJob(lease.job);
  } catch (error) {
    const reason = classify(error).message;
    await lease.deadLetter(reason);
    log.error(
      { event: 'chat.followup_unreadable', record: lease.job.id, reason },
      'an unreadable follow-up record was dead-lettered',
    );
    return { recordId: lease.job.id, settled: 'dead_lettered', reason };
  }
  // Past the day (the processor was down): a request that old is not started unannounced.
  if (settings.now() - Date.parse(record.keptAt) > settings.giveUpAfterMs)
    return giveUp(settings, lease, record, `job ${record.deferred.jobId} had not ended`);
  let outcome: ChatOutcome;
  try {
    outcome = await chat.handle(record.message);
  } catch (error) {
    const c = classify(error);
    log.warn(
      { event: 'chat.followup_failed', err: error, record: lease.job.id },
      'handling a kept follow-up failed; trying again later',
    );
    return later(settings, lease, record, `${c.code}: ${c.message}`);
  }
  if (outcome.kind === 'deferred')
    return later(settings, lease, record, `job ${outcome.jobId} is still queued or running`);
  await tell(settings, record.message, outcome);
  await lease.ack();
  log.info(
    { event: 'chat.followup_done', record: lease.job.id, outcome: outcome.kind },
    'a kept follow-up was handled',
  );
  return { recordId: lease.job.id, settled: 'acked', outcome };
}

/** Tries again after the backoff, or gives up when that would pass the day. */
async function later(
  settings: Settings,
  lease: Lease,
  record: FollowUpRecord,
  reason: string,
): Promise<ProcessedFollowUp> {
  const { log } = settings.options;
  const delayMs = settings.delayOf(lease.attempt);
  if (settings.now() + delayMs - Date.parse(record.keptAt) > settings.giveUpAfterMs)
    return giveUp(settings, lease, record, reason);
  if ((await lease.retry({ delayMs, reason })) === 'dead_lettered') {
    // The queue's attempt budget ran out first (a low maxAttempts): the sender still hears of it.
    log.error(
      { event: 'chat.followup_given_up', record: lease.job.id, reason },
      'a kept follow-up ran out of attempts',
    );
    const outcome: ChatOutcome = {
      kind: 'refused',
      route: record.deferred.route,
      text: `I kept this request, but could not start it after many tries (${reason}). Please send it again.`,
    };
    await tell(settings, record.message, outcome);
    return { recordId: lease.job.id, settled: 'dead_lettered', outcome, reason };
  }
  log.info(
    { event: 'chat.followup_waiting', record: lease.job.id, attempt: lease.attempt, delay_ms: delayMs, reason },
    'a kept follow-up waits longer',
  );
  return { recordId: lease.job.id, settled: 'retrying', delayMs, reason };
}

async function giveUp(
  settings: Settings,
  lease: Lease,
  record: FollowUpRecord,
  reason: string,
): Promise<ProcessedFollowUp> {
  const { deferred } = record;
  await lease.deadLetter(`given up ${Math.round(settings.giveUpAfterMs / 60_000)} min after it was kept: ${reason}`);
  settings.options.log.error(
    { event: 'chat.followup_given_up', record: lease.job.id, job_id: deferred.jobId, reason },
    'a kept follow-up was given up; kept in the dead letter',
  );
  const outcome: ChatOutcome = {
    kind: 'refused',
    route: deferred.route,
    text: `I kept this request while job ${deferred.jobId} of this thread ran, but it did not end in time (${reason}), so I didn't start it. Send it again when that job has finished.`,
  };
  await tell(settings, record.message, outcome);
  return { recordId: lease.job.id, settled: 'dead_lettered', outcome, reason };
}

/** Tells the sender, best effort: a failure is logged, not retried. */
async function tell(settings: Settings, message: ChatMessage, outcome: ChatOutcome): Promise<void> {
  try {
    await settings.options.onOutcome(message, outcome);
  } catch (error) {
    settings.options.log.warn(
      { event: 'chat.followup_tell_failed', err: error },
      'could not tell the sender about a kept follow-up',
    );
  }
}
