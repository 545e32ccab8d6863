import { setTimeout as sleep } from 'node:timers/promises';
import { cancelRequested, classify, CodefleetError } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { JobContext, JobResult } from '@codefleet/pipeline';
import { settleLease, type Lease, type Queue, type Settlement } from '@codefleet/queue';
import type { CancelRequests, TaskLeases } from '@codefleet/store';
import { DayBudgetGate, type DayBudget, type DayBudgetState } from './day-budget.js';
import type { WorkerEvents } from './monitor.js';
import { startPresence, type PresenceOptions } from './presence.js';

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
  leases?: { store: TaskLeases & Partial<CancelRequests>; ttlMs: number };
  /** Receives claim and job events, for health and metrics. */
  events?: WorkerEvents;
  /** Registers the worker in the run store's registry, heartbeated every `heartbeatMs`. */
  registry?: PresenceOptions;
  /**
   * Give up once claims have failed or gone unanswered this long with no answer in between
   * (`worker --once`: a queue that is down is an error to report, not a wait): running jobs
   * finish, then runWorker rejects with `queue_unavailable`. Default: never; failed claims
   * are retried with a backoff doubling from 1 s to {@link maxClaimBackoffMs}.
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
}

/** The longest pause between two claims when the queue keeps failing them. */
export const maxClaimBackoffMs = 30_000;

const settledCounter: Record<Settlement, keyof Omit<WorkerSummary, 'processed'>> = {
  acked: 'acked',
  retried: 'retried',
  dead_lettered: 'deadLettered',
  released: 'released',
};

/** A job claimed by the previous one's ack, and whether its task lease is already taken. */
interface Next {
  lease: Lease;
  taskLease?: boolean | undefined;
}

/** Runs one delivered job; the pipeline's `runJob` bound to its dependencies. */
export type JobRunner = (ctx: JobContext) => Promise<JobResult>;

/** Counts of what the worker did, for the CLI and tests. */
export interface WorkerSummary {
  processed: number;
  acked: number;
  retried: number;
  deadLettered: number;
  released: number;
}

/**
 * Claims jobs with `concurrency` slots, keeps each lease alive with heartbeats, runs the
 * pipeline and settles the lease by its result. A lost lease aborts the running job (its
 * agent processes are killed) so no one publishes without a lease. On shutdown it stops
 * claiming at once, lets running jobs finish within the grace period, then stops them and
 * releases their leases so another worker takes over immediately. Never throws for a job.
 */
export async function runWorker(queue: Queue, runJob: JobRunner, options: WorkerOptions): Promise<WorkerSummary> {
  const summary: WorkerSummary = { processed: 0, acked: 0, retried: 0, deadLettered: 0, released: 0 };
  const running = new Set<AbortController>();
  let graceTimer: NodeJS.Timeout | undefined;
  const onShutdown = () => {
    options.log.info(
      { event: 'worker.draining', running: running.size, grace_ms: options.shutdownGraceMs },
      'shutting down: no new claims',
    );
    graceTimer = setTimeout(() => {
      for (const job of running) job.abort(new Error('shutdown grace period over'));
    }, options.shutdownGraceMs);
  };
  if (options.shutdown.aborted) onShutdown();
  else options.shutdown.addEventListener('abort', onShutdown, { once: true });
  const presence =
    options.registry &&
    startPresence(options.registry, { intervalMs: options.heartbeatMs, draining: options.shutdown, log: options.log });
  void presence?.beat();
  // Claims stop on shutdown, or when the queue has not answered for giveUpAfterMs.
  const giveUp = new AbortController();
  const stopClaiming = AbortSignal.any([options.shutdown, giveUp.signal]);
  // Since when claims (of any slot) have failed or hung with no answer in between.
  let unreachableSince: number | undefined;
  const gate = options.dayBudget && new DayBudgetGate(options.dayBudget, options.log, options.onDayBudget);

  const slot = async (n: number) => {
    // The job the last ack claimed with it (fetch-next), run before claiming again.
    let next: Next | undefined;
    let failures = 0;
    while (!stopClaiming.aborted) {
      if (next) {
        next = await handle(next.lease, next.taskLease);
        continue;
      }
      if (gate && !(options.once ? await gate.check() : await gate.waitOpen(stopClaiming))) return;
      let lease: Lease | undefined;
      const waitMs = options.once ? 0 : (options.claimWaitMs ?? 1_000);
      const slowClaimMs = options.slowClaimMs ?? 30_000;
      // A queue that does not answer (Redis down or paused: its connection waits rather
      // than fails) would otherwise leave no trace in the log; say so while it lasts.
      const silent = setInterval(() => {
        options.log.warn(
          { event: 'queue.not_answering', slot: n, waited_ms: waitMs + slowClaimMs },
          `the queue has not answered a claim for ${Math.round((waitMs + slowClaimMs) / 1000)} s (unreachable?); still waiting`,
        );
      }, waitMs + slowClaimMs);
      const started = Date.now();
      const limit =
        options.giveUpAfterMs === undefined
          ? undefined
          : setTimeout(
              () => {
                const since = unreachableSince ?? started;
                giveUp.abort(
                  new CodefleetError(
                    'queue_unavailable',
                    `the queue did not answer for ${Math.round((Date.now() - since) / 1000)} s: gave up (is it running and reachable?)`,
                  ),
                );
              },
              Math.max(0, options.giveUpAfterMs - (started - (unreachableSince ?? started))),
            );
      try {
        lease = await queue.claim({ workerId: options.workerId, waitMs, signal: stopClaiming });
        options.events?.claimSucceeded();
        unreachableSince = undefined;
        failures = 0;
      } catch (err) {
        options.events?.claimFailed(err);
        if (stopClaiming.aborted) continue;
        unreachableSince ??= started;
        failures += 1;
        // The queue is unreachable: back off and try again rather than die.
        const pauseMs = Math.min(maxClaimBackoffMs, 1_000 * 2 ** Math.min(failures - 1, 10));
        const failingS = Math.round((Date.now() - unreachableSince) / 1000);
        options.log.error(
          { err, event: 'queue.claim_failed', slot: n, failures, failing_s: failingS, retry_in_ms: pauseMs },
          `claim failed (queue unreachable for ${failingS} s); retrying in ${pauseMs / 1000} s`,
        );
        await sleep(pauseMs, undefined, { signal: stopClaiming }).catch(() => undefined);
        continue;
      } finally {
        clearInterval(silent);
        clearTimeout(limit);
      }
      if (!lease) {
        // --once ends when nothing is left, delayed retries included.
        if (
          options.once &&
          (await queue.stats().then(
            (s) => s.depth === 0,
            () => true,
          ))
        )
          return;
        if (options.once) await sleep(100, undefined, { signal: stopClaiming }).catch(() => undefined);
        continue;
      }
      next = await handle(lease);
    }
    if (!next) return;
    // Shutdown began between an ack that claimed the next job and its start: give it back,
    // task lease first, so whoever claims it next finds the task free.
    const { lease, taskLease } = next;
    if (taskLease) await options.leases?.store.release(lease.job.idempotency_key, lease.token).catch(() => undefined);
    await lease
      .release()
      .catch((err: unknown) =>
        options.log.warn(
          { err, event: 'lease.release_failed', job_id: lease.job.id },
          'could not give back a claimed job',
        ),
      );
  };

  /**
   * Runs one delivery and settles it; resolves the next job when the ack claimed one.
   * `taskLease` is whether the task lease was already taken for it (handed over).
   */
  const handle = async (lease: Lease, taskLease?: boolean): Promise<Next | undefined> => {
    const log = options.log.child({ job_id: lease.job.id, attempt: lease.attempt });
    const taskKey = lease.job.idempotency_key;
    const { leases } = options;
    if (leases && !(taskLease ?? (await leases.store.acquire(taskKey, lease.token, leases.ttlMs).catch(() => false)))) {
      // Another delivery of the same task is running somewhere: try again once its lease
      // has had time to end, rather than run the task twice at once.
      log.warn({ event: 'task.busy', task_key: taskKey }, 'another worker runs this task; retrying later');
      await lease.retry({ delayMs: leases.ttlMs, reason: 'another worker runs this task' }).catch(() => undefined);
      summary.processed += 1;
      summary.retried += 1;
      options.events?.jobStarted(lease.job, lease.attempt);
      options.events?.jobSettled('retried', undefined, lease.attempt);
      return undefined;
    }
    const controller = new AbortController();
    running.add(controller);
    presence?.jobStarted(lease);
    options.events?.jobStarted(lease.job, lease.attempt);
    log.info({ event: 'job.claimed', title: lease.job.title }, 'claimed');
    const lost = (err: unknown) => {
      if (controller.signal.aborted) return;
      log.error({ err, event: 'lease.lost' }, 'lease lost: stopping the job');
      controller.abort(err);
    };
    const heartbeat = setInterval(() => {
      lease.heartbeat().catch(lost);
      // A cancel asked for on the issue stops the agent now rather than at the next stage.
      void leases?.store.cancelRequested?.(taskKey).then(
        (cancel) => {
          if (cancel && !controller.signal.aborted) controller.abort(cancelRequested(cancel.by));
        },
        () => undefined,
      );
      leases?.store.renew(taskKey, lease.token, leases.ttlMs).then(
        (ours) => {
          if (!ours) lost(new Error(`task lease on ${taskKey} was taken over`));
        },
        // The store unreachable for a moment is not a lost lease; the fence decides at publish.
        (err: unknown) => log.warn({ err, event: 'task_lease.renew_failed' }, 'could not renew the task lease'),
      );
    }, options.heartbeatMs);
    let result: JobResult | undefined;
    try {
      result = await runJob({
        job: lease.job,
        attempt: lease.attempt,
        workerId: options.workerId,
        signal: controller.signal,
        ...(leases ? { leaseToken: lease.token } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        ...(options.onOutput ? { onOutput: options.onOutput } : {}),
      });
    } catch (err) {
      const c = classify(err);
      log.error({ err, event: 'job.crashed', code: c.code }, 'the pipeline threw; retrying the job');
      result = undefined;
    } finally {
      clearInterval(heartbeat);
      running.delete(controller);
      presence?.jobEnded(lease);
    }
    summary.processed += 1;
    let next: Lease | undefined;
    try {
      let settled: Settlement;
      if (
        result?.action === 'ack' &&
        lease.ackAndClaim &&
        !stopClaiming.aborted &&
        (gate === undefined || (await gate.check()))
      ) {
        // This slot runs another job next anyway: the ack claims it in the same round trip.
        next = await lease.ackAndClaim();
        if (next) options.events?.claimSucceeded();
        settled = 'acked';
      } else {
        settled = await settleLease(lease, result);
      }
      summary[settledCounter[settled]] += 1;
      options.events?.jobSettled(settled, result?.run, lease.attempt);
      log.info({ event: 'job.settled', action: result?.action ?? 'retry' }, 'settled');
    } catch (err) {
      // lease_lost: another worker owns the job now; its result wins.
      options.events?.jobSettled('settle_failed', result?.run, lease.attempt);
      log.warn({ err, event: 'lease.settle_failed' }, 'could not settle the lease');
    }
    // After settling, so the task is never free while its queue lease still runs. The
    // next job's task lease is taken in the same round trip (undefined: handle() tries).
    const releaseFailed = (err: unknown) => {
      log.warn({ err, event: 'task_lease.release_failed' }, 'could not release the task lease');
      return undefined;
    };
    if (!leases) return next && { lease: next };
    if (!next) {
      await leases.store.release(taskKey, lease.token).catch(releaseFailed);
      return undefined;
    }
    const to = { taskKey: next.job.idempotency_key, token: next.token };
    return {
      lease: next,
      taskLease: await leases.store.handOver({ taskKey, token: lease.token }, to, leases.ttlMs).catch(releaseFailed),
    };
  };

  try {
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, (_, n) => slot(n)));
  } finally {
    await presence?.stop();
  }
  clearTimeout(graceTimer);
  options.shutdown.removeEventListener('abort', onShutdown);
  if (giveUp.signal.aborted && !options.shutdown.aborted) {
    options.log.error(
      { event: 'queue.gave_up', after_ms: options.giveUpAfterMs },
      (giveUp.signal.reason as Error).message,
    );
    throw giveUp.signal.reason;
  }
  return summary;
}
