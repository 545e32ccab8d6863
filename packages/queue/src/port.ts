import type { Job } from '@codefleet/core';
import type { HeldBy } from './concurrency.js';

/**
 * The queue port: how producers hand jobs to workers, whatever engine carries them
 * (embedded SQLite, BullMQ on Redis, AWS SQS).
 *
 * What every adapter promises (and the conformance suite checks):
 * - **At-least-once delivery.** A claimed job is held by a lease. If the lease is neither
 *   settled (ack / retry / deadLetter / release) nor extended before it expires, the job is
 *   delivered again, to this or another worker. Side effects must therefore be idempotent.
 * - **Leases and heartbeats.** `claim` returns a {@link Lease} valid for `leaseMs`;
 *   `heartbeat()` extends it. Once another claimer has taken the job over, heartbeat, ack
 *   and retry on the old lease reject with a `lease_lost` error (`LeaseLostError`).
 * - **Attempts.** Every delivery counts, a lease that expired included (the worker
 *   probably crashed). `retry` after the last allowed attempt, or an expired lease on the
 *   last attempt, moves the job to the dead letter with a reason instead.
 * - **Delayed retry.** `retry({delayMs})` makes the job invisible for `delayMs`.
 * - **Dead letter with a reason**, listable, redrivable and droppable.
 * - **Malformed payloads never reach a worker and never crash one**: a message that is not
 *   a valid job is dead-lettered by `claim` with the validation error as its reason.
 * - **Idempotency-key dedup** while a job with that key is pending (ready or delayed) or
 *   running; once it completed or was dead-lettered, the same key may be enqueued again.
 * - **Stats**: depth (ready, delayed), in flight, dead, completed, and when the oldest
 *   waiting job was enqueued.
 * - **Concurrency limits and aging** (`limits`, `agingMs` in the settings; see
 *   `concurrency.ts`): a job whose repository (or requester's share of it) is at its limit
 *   is not delivered, spends no attempt and counts as no delivery toward dead-lettering; a
 *   slot is freed when its job settles or its lease expires. A waiting job's priority rises
 *   with its wait, so none is starved. A held job counts as ready in the stats of the local
 *   queue, as delayed on BullMQ and SQS (it is set aside there until a slot frees).
 * - **Pending**: the jobs still waiting, with the limit that holds each one back; one can be
 *   cancelled (removed) until a worker claims it.
 * - **Damage is loud.** Storage the adapter keeps itself (the local queue's file) that is
 *   truncated or corrupt fails every call that meets it with a `queue_unavailable` error of
 *   verdict `permanent`, naming the file and the fix; it is never read as an empty queue.
 *
 * What it leaves out, on purpose:
 * - Exactly-once processing. Duplicates are prevented where the effects happen (branch,
 *   PR and comment writes are `ensure*`, publishing is fenced by the run store).
 * - Strict ordering. A high-priority job is claimed before normal ones everywhere (on
 *   SQS with a priority queue configured); low before normal only where the engine has
 *   priorities (local, BullMQ); a job that waited long enough goes before a newer one of
 *   a higher priority (aging). FIFO only per SQS message group.
 * - Results, progress events and cancellation of a running job: the run store owns those.
 * - Detecting a stale ack everywhere: SQS cannot always tell an old receipt handle from a
 *   live one, so fencing in the run store, not the queue, guards publishing.
 */
export interface Queue {
  /** Which engine carries this queue. */
  readonly backend: QueueBackendName;
  /**
   * Validates and enqueues a job. Rejects with `InvalidJobError` (naming the field and
   * value) for a malformed job, so a producer learns at once; resolves with
   * `deduplicated: true` and the existing job's id when a job with the same idempotency
   * key is still pending or running.
   */
  enqueue(job: Job): Promise<EnqueueResult>;
  /**
   * Claims the next visible job, waiting up to `waitMs` for one. Resolves `undefined`
   * when none arrived in time or `signal` aborted the wait.
   */
  claim(options: ClaimOptions): Promise<Lease | undefined>;
  /** Counts per state. */
  stats(): Promise<QueueStats>;
  /**
   * Jobs waiting to be claimed (ready or delayed, not running), longest-waiting first, at
   * most `limit` (default 100), each with the limit that holds it back when one does.
   */
  pending(options?: { limit?: number }): Promise<PendingJob[]>;
  /**
   * Removes a job still waiting (ready or delayed, one a limit holds back included) before
   * any worker claims it: an operator cancelled it (the caller journals who and why). It is
   * never delivered afterwards and its idempotency key is free again. A job claimed
   * meanwhile, finished, dead-lettered or unknown is `not_found`: a running job is cancelled
   * through the run store, where its worker looks.
   */
  cancelPending(id: string): Promise<CancelPendingResult>;
  /** Dead-lettered jobs, oldest first. */
  deadLetters(options?: { limit?: number }): Promise<DeadLetter[]>;
  /** Moves a dead-lettered job back to ready with a fresh attempt budget. */
  redrive(id: string): Promise<RedriveResult>;
  /**
   * Removes a dead-lettered job for good (an operator gave up on it; the caller journals
   * who and why). Only a dead letter: a pending or running job with the id is `not_found`.
   */
  drop(id: string): Promise<DropResult>;
  /**
   * Optional: reads all of the storage the adapter keeps itself and rejects as a damaged
   * file does (see above) when any of it is damaged. It reads the whole file, so callers
   * run it where a wrong answer would mislead: a worker's start, `doctor`, `dlq list`.
   * Engines that keep their own storage (Redis, SQS) leave it out.
   */
  checkStorage?(): Promise<void>;
  /**
   * Optional (retention): deletes the jobs that finished before `before` (epoch ms),
   * completed ones and dead letters, and the completed ones past the newest `keepCompleted`,
   * in batches of `batch` (default 500) so no call holds the queue for long; resolves how
   * many of each went. A dead letter goes by age only: it is a failure nobody has looked at
   * yet, and a burst of successes must not push it out. A pending or running job is never
   * touched. Engines that expire what they keep themselves (SQS) leave it out.
   */
  trim?(options: QueueTrimOptions): Promise<QueueTrim>;
  /** Releases connections and file handles; pending claims resolve `undefined`. */
  close(): Promise<void>;
}

/** What `Queue.trim` deletes; neither limit set deletes nothing. */
export interface QueueTrimOptions {
  /** Epoch ms: finished jobs (completed and dead letters) from before it go. */
  before?: number;
  /** Completed jobs past this many, the newest kept, go. */
  keepCompleted?: number;
  batch?: number;
}

/** What `Queue.trim` deleted. */
export interface QueueTrim {
  completed: number;
  deadLetters: number;
}

/** The engines behind the port. */
export type QueueBackendName = 'local' | 'bullmq' | 'sqs';

/** What `enqueue` did. */
export interface EnqueueResult {
  /** The id of the job that will run: the new one, or the pending/running duplicate. */
  id: string;
  deduplicated: boolean;
}

/** Options for `claim`. */
export interface ClaimOptions {
  /** Recorded on the lease, for stats, logs and the dead letter. */
  workerId: string;
  /** How long to wait for a job before resolving `undefined`; 0 = do not wait. */
  waitMs?: number;
  /** Aborts the wait (graceful shutdown). */
  signal?: AbortSignal;
}

/** A claimed job. Settle it exactly once with ack, retry, deadLetter or release. */
export interface Lease {
  readonly job: Job;
  /** 1-based delivery count, this delivery included. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Unique per claim; later used to fence publishing. */
  readonly token: string;
  /** Epoch ms at which the job becomes visible to others unless heartbeated. */
  readonly expiresAt: number;
  /** Extends the lease by the queue's lease duration from now. */
  heartbeat(): Promise<void>;
  /** The job is done; it will not be delivered again. */
  ack(): Promise<void>;
  /**
   * Optional: `ack`, and claim the next visible job in the same round trip (BullMQ's
   * fetch-next), without waiting. Resolves the new lease, or `undefined` when no job was
   * ready; the ack happened either way. Only for a caller that runs the next job at once:
   * until settled, the claimed job is in flight like any other. Adapters without it
   * leave it out; callers then `ack` and `claim`.
   */
  ackAndClaim?(): Promise<Lease | undefined>;
  /**
   * A transient failure: deliver again after `delayMs`, or dead-letter with the reason
   * when this was the last allowed attempt. Resolves to which of the two happened.
   */
  retry(options: { delayMs: number; reason: string }): Promise<'retrying' | 'dead_lettered'>;
  /** A permanent failure: move to the dead letter with `reason`. */
  deadLetter(reason: string): Promise<void>;
  /** Gives the job back for immediate redelivery without spending an attempt (shutdown). */
  release(): Promise<void>;
}

/** Counts per state. `depth` = ready + delayed. */
export interface QueueStats {
  ready: number;
  delayed: number;
  inFlight: number;
  deadLetter: number;
  completed: number;
  depth: number;
  /**
   * Epoch ms at which the longest-waiting ready or delayed job entered the queue (its
   * enqueue, or its redrive; a retry keeps the time); undefined when none waits. What
   * each adapter can see is in its `stats` comment.
   */
  oldestQueuedAt?: number;
}

/** A job waiting in the queue, as `pending` lists it. */
export interface PendingJob {
  id: string;
  repo: string;
  requestedBy: string;
  priority: Job['priority'];
  /** The task's title; absent where the engine did not keep it (SQS jobs enqueued before it was). */
  title?: string;
  /** Epoch ms at which it entered the queue (its enqueue or redrive; a retry keeps the time). */
  enqueuedAt: number;
  /**
   * Set when a concurrency limit keeps it from being claimed: its repository (or its
   * requester's share of it) runs as many jobs as allowed.
   */
  heldBy?: HeldBy;
}

/** A job the queue gave up on. */
export interface DeadLetter {
  id: string;
  reason: string;
  attempts: number;
  /** Epoch ms. */
  deadAt: number;
  /** The parsed job, when the payload was a valid job. */
  job?: Job;
  /** The payload as stored (bounded), for malformed messages. */
  raw: string;
}

/** Outcome of `redrive`. */
export type RedriveResult =
  | { status: 'redriven'; id: string }
  | { status: 'not_found' }
  | { status: 'duplicate_active'; activeId: string }
  /** A queue that signs jobs (`signedQueue`) refuses a dead letter whose job does not verify: it would only be dead-lettered again. */
  | { status: 'refused_unsigned'; reason: string };

/** Outcome of `drop`. */
export type DropResult = { status: 'dropped'; id: string } | { status: 'not_found' };

/** Outcome of `cancelPending`: the job removed (itself, where the engine keeps it), or none waiting with the id. */
export type CancelPendingResult = { status: 'cancelled'; id: string; job?: Job } | { status: 'not_found' };
