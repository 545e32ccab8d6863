import { classify } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { JobContext, JobResult } from '@codefleet/pipeline';
import type { Lease, Queue } from '@codefleet/queue';
import { startClaiming, type Claimer } from './claiming.js';
import { watchCancellation, type Cancellation } from './cancellation.js';
import { DayBudgetGate, type DayBudget, type DayBudgetState } from './day-budget.js';
import type { WorkerEvents } from './monitor.js';
import { startPresence, type Presence, type PresenceOptions } from './presence.js';
import { settle, type WorkerSummary } from './settle.js';
import { holdLeases, type TaskLeaseOptions } from './task-lease.js';

/** How one worker process consumes the queue. */
export interface WorkerOptions {
  workerId: string;
  /** Jobs run at the same time in this process. */
  concurrency: number;
  /** Lease-extending heartbeat interval. */
  heartbeatMs: number;
  /** After shutdown starts, how long running jobs may finish before they are stopped and released. */
  shutdownGraceMs: number;
  /** Stop when the queue is empty (no ready or delayed job) instead of waiting for more (CLI `worker --once`, the demo). */
  once?: boolean;
  /** Aborting starts the graceful shutdown: no new claims, then drain or release. */
  shutdown: AbortSignal;
  log: Logger;
  /** How long an idle claim waits before looking again. */
  claimWaitMs?: number;
  /** A claim still unanswered this long after its wait is logged as `queue.not_answering`; default 30 000 ms. */
  slowClaimMs?: number;
  onProgress?: JobContext['onProgress'];
  /** Output of the running agent or check, for live progress (see JobContext.onOutput). */
  onOutput?: JobContext['onOutput'];
  /**
   * Task leases in the shared run store: at most one running job per task key across the
   * fleet, renewed with every heartbeat, and the token that fences publishing. Without
   * them (tests of the loop alone) only the queue lease guards a job.
   */
  leases?: TaskLeaseOptions;
  /** Receives claim and job events, for health and metrics. */
  events?: WorkerEvents;
  /** Registers the worker in the run store's registry, heartbeated every `heartbeatMs`. */
  registry?: PresenceOptions;
  /**
   * Give up once claims have failed or gone unanswered this long with no answer in between
   * (`worker --once`: a queue that is down is an error to report, not a wait): running jobs
   * finish, then runWorker rejects with `queue_unavailable`. Default: never; failed claims
   * are retried with a backoff doubling from 1 s to 30 s (see {@link startClaiming}).
   */
  giveUpAfterMs?: number;
  /**
   * The fleet's daily money budget (costs.budget_usd.day): once the day's spend in the
   * ledger reaches it, no job is claimed until the next UTC day (see {@link DayBudgetGate}).
   * `--once` then ends instead of waiting.
   */
  dayBudget?: DayBudget;
  /** Told when claiming pauses for the day budget or resumes (metrics). */
  onDayBudget?: (state: DayBudgetState) => void;
  /**
   * Whether an ack claims the slot's next job in the same round trip when the queue can
   * (BullMQ's fetch-next, `Lease.ackAndClaim`), its task lease handed over in one store
   * call: two round trips fewer per job, which matters only where jobs are very short (the
   * worker's overhead bench); a real job runs for minutes. Default true; false claims every
   * job with `Queue.claim`.
   */
  fetchNext?: boolean;
}

/** Runs one delivered job; the pipeline's `runJob` bound to its dependencies. */
export type JobRunner = (ctx: JobContext) => Promise<JobResult>;

/** A job claimed by the previous one's ack, and whether its task lease is already taken. */
interface Next {
  lease: Lease;
  taskLease?: boolean | undefined;
}

/** What the slots of one worker share. */
interface Slots {
  runJob: JobRunner;
  options: WorkerOptions;
  summary: WorkerSummary;
  claimer: Claimer;
  cancellation: Cancellation;
  gate: DayBudgetGate | undefined;
  presence: Presence | undefined;
}

/**
 * Claims jobs with `concurrency` slots, keeps each lease alive with heartbeats, runs the
 * pipeline and settles the lease by its result. A lost lease aborts the running job (its
 * agent processes are killed) so no one publishes without a lease. On shutdown it stops
 * claiming at once, lets running jobs finish within the grace period, then stops them and
 * releases their leases so another worker takes over immediately. Never throws for a job.
 */
export async function runWorker(queue: Queue, runJob: JobRunner, options: WorkerOptions): Promise<WorkerSummary> {
  const { log } = options;
  const summary: WorkerSummary = { processed: 0, acked: 0, retried: 0, deadLettered: 0, released: 0 };
  const cancellation = watchCancellation({
    shutdown: options.shutdown,
    graceMs: options.shutdownGraceMs,
    log,
    cancels: options.leases?.store,
  });
  const presence =
    options.registry &&
    startPresence(options.registry, { intervalMs: options.heartbeatMs, draining: options.shutdown, log });
  void presence?.beat();
  const claimer = startClaiming(queue, options);
  const gate = options.dayBudget && new DayBudgetGate(options.dayBudget, log, options.onDayBudget);
  const slots: Slots = { runJob, options, summary, claimer, cancellation, gate, presence };
  try {
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, (_, n) => runSlot(slots, n)));
  } finally {
    await presence?.stop();
  }
  cancellation.dispose();
  const gaveUp = claimer.gaveUp();
  if (gaveUp !== undefined) {
    log.error({ event: 'queue.gave_up', after_ms: options.giveUpAfterMs }, (gaveUp as Error).message);
    throw gaveUp;
  }
  return summary;
}

/** One slot: claims and runs one job at a time until claims stop (or `once` drains the queue). */
async function runSlot(slots: Slots, n: number): Promise<void> {
  const { claimer, gate, options } = slots;
  // The job the last ack claimed with it (fetch-next), run before claiming again.
  let next: Next | undefined;
  while (!claimer.signal.aborted) {
    if (next) {
      next = await runDelivery(slots, next);
      continue;
    }
    if (gate && !(await gate.admit(claimer.signal, !options.once))) return;
    const claimed = await claimer.claim(n);
    if (claimed === 'drained') return;
    if (claimed !== 'again') next = await runDelivery(slots, { lease: claimed });
  }
  if (next) await giveBack(next, options);
}

/**
 * Shutdown began between an ack that claimed the next job and its start: gives it back,
 * task lease first, so whoever claims it next finds the task free.
 */
async function giveBack({ lease, taskLease }: Next, options: WorkerOptions): Promise<void> {
  if (taskLease) await options.leases?.store.release(lease.job.idempotency_key, lease.token).catch(() => undefined);
  await lease
    .release()
    .catch((err: unknown) =>
      options.log.warn(
        { err, event: 'lease.release_failed', job_id: lease.job.id },
        'could not give back a claimed job',
      ),
    );
}

/**
 * Runs one delivery and settles it; resolves the next job when the ack claimed one.
 * `taskLease` is whether the task lease was already taken for it (handed over).
 */
async function runDelivery(slots: Slots, { lease, taskLease }: Next): Promise<Next | undefined> {
  const { options, summary, presence } = slots;
  const log = options.log.child({ job_id: lease.job.id, attempt: lease.attempt });
  const hold = await holdLeases(lease, options.leases, log, taskLease);
  if (!hold) {
    await retryBusyTask(lease, slots, log);
    return undefined;
  }
  const job = slots.cancellation.start(lease.job.idempotency_key, log);
  presence?.jobStarted(lease);
  options.events?.jobStarted(lease.job, lease.attempt);
  log.info({ event: 'job.claimed', title: lease.job.title }, 'claimed');
  const stopHeartbeat = hold.keepAlive(job, options.heartbeatMs);
  let result: JobResult | undefined;
  try {
    result = await slots.runJob({
      job: lease.job,
      attempt: lease.attempt,
      workerId: options.workerId,
      signal: job.signal,
      ...(options.leases ? { leaseToken: lease.token } : {}),
      // The worker's registry entry shows where the job is (the dashboard reads it), beside
      // whatever else listens (the CLI's status line).
      onProgress: (p) => {
        presence?.progress(lease, p);
        options.onProgress?.(p);
      },
      onOutput: (source, chunk) => {
        presence?.output(lease, source, chunk);
        options.onOutput?.(source, chunk);
      },
    });
  } catch (err) {
    const c = classify(err);
    log.error({ err, event: 'job.crashed', code: c.code }, 'the pipeline threw; retrying the job');
    result = undefined;
  } finally {
    stopHeartbeat();
    job.end();
    presence?.jobEnded(lease);
  }
  const next = await settle(lease, result, {
    summary,
    log,
    events: options.events,
    // This slot runs another job next anyway: the ack claims it in the same round trip.
    fetchNext: async () =>
      (options.fetchNext ?? true) &&
      !slots.claimer.signal.aborted &&
      (slots.gate === undefined || (await slots.gate.check())),
  });
  const handedOver = await hold.pass(next);
  return next && { lease: next, taskLease: handedOver };
}

/**
 * Another delivery of the same task is running somewhere: try again once its lease has had
 * time to end, rather than run the task twice at once.
 */
async function retryBusyTask(lease: Lease, { options, summary }: Slots, log: Logger): Promise<void> {
  const ttlMs = options.leases?.ttlMs ?? 0;
  log.warn(
    { event: 'task.busy', task_key: lease.job.idempotency_key },
    'another worker runs this task; retrying later',
  );
  await lease.retry({ delayMs: ttlMs, reason: 'another worker runs this task' }).catch(() => undefined);
  summary.processed += 1;
  summary.retried += 1;
  options.events?.jobStarted(lease.job, lease.attempt);
  options.events?.jobSettled('retried', undefined, lease.attempt);
}
