import type { Registry } from 'prom-client';
import type { Job, RunRecord, UnsignedWhy } from '@codefleet/core';
import type { Queue, Settlement } from '@codefleet/queue';
import { WorkerMetrics } from './metrics.js';
import type { Trimmed } from './retention.js';

/** What the worker loop reports as it goes; {@link WorkerMonitor} implements it. */
export interface WorkerEvents {
  /** A claim round trip to the queue worked (a job or none). */
  claimSucceeded(): void;
  claimFailed(error: unknown): void;
  /** A delivery starts running (`job` and `attempt` let metrics see how long it waited). */
  jobStarted(job?: Job, attempt?: number): void;
  /** A job's delivery ended; `run` is the pipeline's record when it returned one. */
  jobSettled(settlement: Settlement | 'settle_failed', run: RunRecord | undefined, attempt: number): void;
}

/** Settings of {@link WorkerMonitor}. */
export interface MonitorOptions {
  queue: Queue;
  /**
   * How long without a working claim round trip before /healthz fails. The loop claims
   * at least every `claimWaitMs` while it has a free slot; a busy worker with every slot
   * taken claims nothing, so that case counts as healthy while jobs run.
   */
  staleAfterMs: number;
  /** Live workers in the fleet (the run store's worker registry), for `codefleet_workers_live`. */
  liveWorkers?: () => Promise<number>;
  /** What the fleet spent today, for `codefleet_spend_today_usd`. */
  spentToday?: () => Promise<number>;
  now?: () => number;
}

/**
 * Health and Prometheus metrics of one worker process (see {@link WorkerMetrics} for what
 * is exported). Health fails when the queue connection has stopped taking claims: the last
 * claim failed, or no claim worked for `staleAfterMs` while a slot was free. Made by
 * {@link WorkerMonitor.create}, which loads prom-client (about 12 MB resident): a worker
 * without a metrics port never does.
 */
export class WorkerMonitor implements WorkerEvents {
  readonly registry: Registry;
  readonly #options: MonitorOptions;
  readonly #now: () => number;
  readonly #metrics: WorkerMetrics;
  #lastClaimOk: number;
  #lastClaimError: { at: number; message: string } | undefined;
  #inFlight = 0;
  readonly #concurrency: number;

  static async create(options: MonitorOptions, concurrency: number): Promise<WorkerMonitor> {
    const prom = await import('prom-client');
    return new WorkerMonitor(
      options,
      concurrency,
      new prom.Registry(),
      (registry) =>
        new WorkerMetrics(prom, registry, {
          queue: options.queue,
          ...(options.liveWorkers ? { liveWorkers: options.liveWorkers } : {}),
          ...(options.spentToday ? { spentToday: options.spentToday } : {}),
          ...(options.now ? { now: options.now } : {}),
        }),
    );
  }

  private constructor(
    options: MonitorOptions,
    concurrency: number,
    registry: Registry,
    metrics: (registry: Registry) => WorkerMetrics,
  ) {
    this.registry = registry;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#lastClaimOk = this.#now();
    this.#concurrency = concurrency;
    this.#metrics = metrics(registry);
  }

  claimSucceeded(): void {
    this.#lastClaimOk = this.#now();
    this.#lastClaimError = undefined;
  }

  claimFailed(error: unknown): void {
    this.#lastClaimError = { at: this.#now(), message: error instanceof Error ? error.message : String(error) };
  }

  jobStarted(job?: Job, attempt?: number): void {
    this.#inFlight += 1;
    this.#metrics.jobStarted(job, attempt ?? 0, this.#inFlight);
  }

  jobSettled(settlement: Settlement | 'settle_failed', run: RunRecord | undefined, attempt: number): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    // A busy slot freed: the next claim starts the staleness clock afresh.
    this.#lastClaimOk = Math.max(this.#lastClaimOk, this.#now());
    this.#metrics.jobSettled(settlement, run, attempt, this.#inFlight);
  }

  /** A claimed job did not verify and was dead-lettered unrun (`codefleet_jobs_unsigned_total`). */
  jobUnsigned(why: UnsignedWhy): void {
    this.#metrics.jobUnsigned(why);
  }

  /** A housekeeping pass deleted these (`codefleet_retention_trimmed_total`). */
  trimmed(trimmed: Trimmed): void {
    this.#metrics.trimmed(trimmed);
  }

  /** Healthy, or the reason it is not. */
  health(): { ok: true } | { ok: false; reason: string } {
    if (this.#lastClaimError && this.#lastClaimError.at >= this.#lastClaimOk) {
      return { ok: false, reason: `the queue refused the last claim: ${this.#lastClaimError.message}` };
    }
    const idle = this.#inFlight < this.#concurrency;
    const since = this.#now() - this.#lastClaimOk;
    if (idle && since > this.#options.staleAfterMs) {
      return { ok: false, reason: `no claim reached the queue for ${Math.round(since / 1000)} s` };
    }
    return { ok: true };
  }
}
