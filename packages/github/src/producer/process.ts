import { classify, type Classified } from '@codefleet/core';
import { escapeInline } from '@codefleet/forge';
import { processUntilAborted, type Lease, type Queue } from '@codefleet/queue';
import { deliveryOf, jobIdOf, type Delivery } from './delivery.js';
import { followUpFromCi } from './ci-feedback.js';
import {
  cancelFromIssue,
  followUpFromReview,
  triggerFromIssue,
  type TriggerDeps,
  type TriggerOutcome,
} from './trigger.js';

/** Settings of {@link createDeliveryProcessor}. */
export interface ProcessorOptions {
  /** The queue the webhook records deliveries in: a queue of its own, never the jobs' queue. */
  deliveries: Queue;
  workerId?: string;
  /** How long after receipt a delivery is still retried (default 24 h); then it is dead-lettered. */
  giveUpAfterMs?: number;
  /** First retry delay, doubled per try up to 5 minutes (default 10 s). */
  baseDelayMs?: number;
  now?: () => number;
}

/** What processing one recorded delivery did. */
export interface ProcessedDelivery {
  deliveryId: string;
  outcome?: TriggerOutcome;
  /** acked: done; retrying: kept for later (a failure or a deferred review); dead_lettered: given up, reported. */
  settled: 'acked' | 'retrying' | 'dead_lettered';
  delayMs?: number;
  reason?: string;
}

/** Acts on recorded deliveries, one at a time. */
export interface DeliveryProcessor {
  /** Claims the next due delivery (waiting up to `waitMs`) and acts on it; undefined when none came. */
  processNext(options?: { waitMs?: number; signal?: AbortSignal }): Promise<ProcessedDelivery | undefined>;
  /** Processes deliveries until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

const baseDelayMs = 10_000;
const maxBackoffMs = 5 * 60_000;
const maxGuessedWaitMs = 60 * 60_000;

/**
 * Delay before the next try of a delivery after try `attempt` (1-based) failed or was
 * deferred: 10 s doubling up to 5 minutes, and never sooner than GitHub asked
 * (`retryAfterMs`: until the primary limit's reset, or a secondary limit's retry-after).
 * A wait GitHub did not name (a secondary limit without retry-after: "at least one
 * minute", then exponentially longer) doubles with every try, up to an hour.
 */
export function deliveryRetryDelayMs(
  attempt: number,
  error?: Pick<Classified, 'retryAfterMs'> & { waitNamed?: boolean },
  baseMs = baseDelayMs,
): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 30);
  const backoff = Math.min(maxBackoffMs, baseMs * 2 ** exponent);
  const asked = error?.retryAfterMs ?? 0;
  const wait = error?.waitNamed === false ? Math.min(maxGuessedWaitMs, asked * 2 ** exponent) : asked;
  return Math.max(backoff, wait);
}

/**
 * Processes the deliveries the webhook recorded: each is acted on (label, command,
 * review) from its record, and only then acked. A transient failure (GitHub 5xx, a rate
 * limit, the queue) keeps the record for a later try with {@link deliveryRetryDelayMs};
 * a review waiting for its issue's job is kept the same way; a permanent failure, or a
 * delivery still failing `giveUpAfterMs` after receipt, is dead-lettered with its
 * reason, logged as an error and reported on the issue or pull request. Nothing a
 * webhook answered 2xx for is dropped silently.
 */
export function createDeliveryProcessor(deps: TriggerDeps, options: ProcessorOptions): DeliveryProcessor {
  const settings: Settings = {
    deps,
    now: options.now ?? Date.now,
    giveUpAfterMs: options.giveUpAfterMs ?? 24 * 60 * 60_000,
    ...(options.baseDelayMs === undefined ? {} : { baseDelayMs: options.baseDelayMs }),
  };
  const workerId = options.workerId ?? `producer-${process.pid}`;

  const processNext: DeliveryProcessor['processNext'] = async (opts = {}) => {
    const lease = await options.deliveries.claim({
      workerId,
      waitMs: opts.waitMs ?? 0,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    return lease ? handleDelivery(settings, lease) : undefined;
  };

  return {
    processNext,
    run: (signal) =>
      processUntilAborted(signal, processNext, (error) =>
        deps.log.error(
          { err: error, event: 'delivery.process_failed' },
          'processing a delivery failed; the record is kept',
        ),
      ),
  };
}

/** What handling a delivery reads: the trigger's dependencies and the processor's resolved settings. */
interface Settings {
  deps: TriggerDeps;
  now: () => number;
  giveUpAfterMs: number;
  baseDelayMs?: number;
}

type ReadDelivery = Delivery & { receivedAt: string };

/** Reads the lease's record, acts on it and settles the lease: acked, kept for later or dead-lettered. */
async function handleDelivery(settings: Settings, lease: Lease): Promise<ProcessedDelivery> {
  const { deps } = settings;
  let delivery: ReadDelivery;
  try {
    delivery = deliveryOf(lease.job);
  } catch (error) {
    const reason = classify(error).message;
    await lease.deadLetter(reason);
    deps.log.error(
      { event: 'delivery.dead_lettered', record: lease.job.id, reason },
      'unreadable delivery record dead-lettered',
    );
    return { deliveryId: lease.job.id, settled: 'dead_lettered', reason };
  }
  const log = deliveryLog(deps, delivery, lease);
  let outcome: TriggerOutcome;
  try {
    outcome = await actOn(deps, delivery, lease.attempt);
  } catch (error) {
    return settleFailure(settings, lease, delivery, error);
  }
  if (outcome.status === 'deferred')
    return later(
      settings,
      lease,
      delivery,
      deliveryRetryDelayMs(lease.attempt, undefined, settings.baseDelayMs),
      outcome.reason,
      outcome,
    );
  await lease.ack();
  log.info({ event: 'delivery.done', outcome }, `delivery ${outcome.status}`);
  return { deliveryId: delivery.id, outcome, settled: 'acked' };
}

/** Acts on one delivery from its record: the trigger its intent names. */
function actOn(deps: TriggerDeps, delivery: Delivery, attempt: number): Promise<TriggerOutcome> {
  const { intent } = delivery;
  const base = { repo: intent.repo, actor: intent.actor, via: `webhook ${delivery.id}`, jobId: jobIdOf(delivery) };
  switch (intent.kind) {
    case 'label':
      return triggerFromIssue(deps, { ...base, issueNumber: intent.issueNumber, requireLabel: intent.label });
    case 'command':
      return intent.command === 'cancel'
        ? cancelFromIssue(deps, { ...base, issueNumber: intent.issueNumber })
        : triggerFromIssue(deps, { ...base, issueNumber: intent.issueNumber });
    case 'review':
      return followUpFromReview(deps, {
        ...base,
        issueNumber: intent.pullNumber,
        pullNumber: intent.pullNumber,
        headRef: intent.headRef,
        headRepo: intent.headRepo,
        reviewBody: intent.reviewBody,
        reviewState: intent.reviewState,
        deferred: attempt > 1,
        ...(intent.reviewId === undefined ? {} : { reviewId: intent.reviewId }),
      });
    case 'ci':
      return followUpFromCi(deps, {
        repo: intent.repo,
        sha: intent.sha,
        branch: intent.branch,
        pullNumbers: intent.pullNumbers,
        outcome: intent.outcome,
        via: base.via,
      });
  }
}

/** A failed try: a permanent failure is dead-lettered and reported, a transient one kept for later. */
async function settleFailure(
  settings: Settings,
  lease: Lease,
  delivery: ReadDelivery,
  error: unknown,
): Promise<ProcessedDelivery> {
  const c = classify(error);
  const reason = `${c.code}: ${c.message}`;
  if (c.verdict !== 'transient') {
    await lease.deadLetter(reason);
    deliveryLog(settings.deps, delivery, lease).error(
      { err: error, event: 'delivery.dead_lettered', code: c.code },
      'delivery failed for good; kept in the dead letter and reported on GitHub',
    );
    await report(settings.deps, delivery, reason);
    return { deliveryId: delivery.id, settled: 'dead_lettered', reason };
  }
  const waitNamed = (error as { details?: { waitNamed?: unknown } }).details?.waitNamed;
  const wait = {
    ...(c.retryAfterMs === undefined ? {} : { retryAfterMs: c.retryAfterMs }),
    ...(waitNamed === false ? { waitNamed } : {}),
  };
  const delayMs = deliveryRetryDelayMs(lease.attempt, wait, settings.baseDelayMs);
  return later(settings, lease, delivery, delayMs, reason);
}

/** The log of one try of one delivery. */
function deliveryLog(deps: TriggerDeps, delivery: Delivery, lease: Lease) {
  return deps.log.child({ delivery: delivery.id, github_event: delivery.event, attempt: lease.attempt });
}

/** Retries the lease after `delayMs`, or dead-letters it when that would pass the give-up time. */
async function later(
  settings: Settings,
  lease: Lease,
  delivery: ReadDelivery,
  delayMs: number,
  reason: string,
  outcome?: TriggerOutcome,
): Promise<ProcessedDelivery> {
  const { deps, giveUpAfterMs } = settings;
  const base = { deliveryId: delivery.id, ...(outcome ? { outcome } : {}), reason };
  const log = deliveryLog(deps, delivery, lease);
  const age = settings.now() + delayMs - Date.parse(delivery.receivedAt);
  const settled =
    age > giveUpAfterMs
      ? (await lease.deadLetter(`given up ${Math.round(giveUpAfterMs / 60_000)} min after receipt: ${reason}`),
        'dead_lettered' as const)
      : await lease.retry({ delayMs, reason });
  if (settled === 'dead_lettered') {
    log.error(
      { event: 'delivery.dead_lettered', reason },
      'delivery given up; kept in the dead letter and reported on GitHub',
    );
    await report(deps, delivery, reason);
    return { ...base, settled: 'dead_lettered' };
  }
  log.warn({ event: 'delivery.retrying', delay_ms: delayMs, reason }, 'delivery kept for a later try');
  return { ...base, settled: 'retrying', delayMs };
}

/** Tells the issue (or pull request) that its delivery was given up, best effort. */
async function report(deps: TriggerDeps, delivery: Delivery, reason: string): Promise<void> {
  const { intent } = delivery;
  if (intent.kind === 'ci') {
    // Checks fail again on the next push; a pull request is told only through CI feedback's own comments.
    deps.log.warn(
      { event: 'delivery.ci_given_up', delivery: delivery.id, repo: intent.repo, sha: intent.sha, reason },
      'CI feedback delivery given up',
    );
    return;
  }
  const what =
    intent.kind === 'label'
      ? `the \`${intent.label}\` label`
      : intent.kind === 'command'
        ? `\`/codefleet ${intent.command}\``
        : 'this review';
  const again =
    intent.kind === 'review' ? 'submit the review again' : 'remove and re-add the label, or comment `/codefleet retry`';
  const number = intent.kind === 'review' ? intent.pullNumber : intent.issueNumber;
  try {
    await deps.issues.ensureComment({
      repo: intent.repo,
      target: { kind: intent.kind === 'review' ? 'pull' : 'issue', number },
      marker: `delivery:${delivery.id}`,
      body: `⚠️ codefleet received ${what} from @${escapeInline(intent.actor, 100)} but could not act on it: ${escapeInline(reason, 1_000)}\n\nTo try again, ${again}.`,
    });
  } catch (error) {
    deps.log.warn(
      { err: error, event: 'delivery.report_failed', delivery: delivery.id },
      'could not report the failed delivery on GitHub',
    );
  }
}
