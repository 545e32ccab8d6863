import type * as Prom from 'prom-client';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RunRecord } from '@codefleet/core';
import type { Queue, QueueStats, Settlement } from '@codefleet/queue';

/** What the worker loop reports as it goes; {@link WorkerMonitor} implements it. */
export interface WorkerEvents {
  /** A claim round trip to the queue worked (a job or none). */
  claimSucceeded(): void;
  claimFailed(error: unknown): void;
  jobStarted(): void;
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
  now?: () => number;
}

/**
 * Health and Prometheus metrics of one worker process: jobs by outcome, stage durations,
 * attempts, queue depth and in-flight jobs. Health fails when the queue connection has
 * stopped taking claims: the last claim failed, or no claim worked for `staleAfterMs`
 * while a slot was free. Made by {@link WorkerMonitor.create}, which loads prom-client
 * (about 12 MB resident): a worker without a metrics port never does.
 */
export class WorkerMonitor implements WorkerEvents {
  readonly registry: Registry;
  readonly #options: MonitorOptions;
  readonly #now: () => number;
  #lastClaimOk: number;
  #lastClaimError: { at: number; message: string } | undefined;
  #inFlight = 0;
  readonly #concurrency: number;
  readonly #jobs: Counter;
  readonly #stages: Histogram;
  readonly #attempts: Histogram;
  readonly #inFlightGauge: Gauge;

  static async create(options: MonitorOptions, concurrency: number): Promise<WorkerMonitor> {
    return new WorkerMonitor(options, concurrency, await import('prom-client'));
  }

  private constructor(options: MonitorOptions, concurrency: number, prom: typeof Prom) {
    const { Counter, Gauge, Histogram, Registry } = prom;
    this.registry = new Registry();
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#lastClaimOk = this.#now();
    this.#concurrency = concurrency;
    this.#jobs = new Counter({ name: 'codefleet_jobs_total', help: 'Job deliveries by how they were settled and the run outcome.', labelNames: ['settlement', 'outcome'], registers: [this.registry] });
    this.#stages = new Histogram({
      name: 'codefleet_stage_duration_seconds', help: 'Time spent in each stage of a delivery.', labelNames: ['stage'],
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 1800, 3600], registers: [this.registry],
    });
    this.#attempts = new Histogram({ name: 'codefleet_job_attempt', help: 'Delivery attempt number of settled jobs.', buckets: [1, 2, 3, 4, 5, 8], registers: [this.registry] });
    this.#inFlightGauge = new Gauge({ name: 'codefleet_jobs_in_flight', help: 'Jobs this process runs now.', registers: [this.registry] });
    const queue = options.queue;
    // Read from the queue at scrape time (depth is the fleet's, not this process's). A
    // scrape collects every metric at once: both gauges share one stats call.
    let pending: Promise<QueueStats | undefined> | undefined;
    const stats = () => (pending ??= queue.stats().catch(() => undefined).finally(() => { pending = undefined; }));
    new Gauge({
      name: 'codefleet_queue_depth', help: 'Jobs waiting in the queue (ready and delayed).', registers: [this.registry],
      async collect() { this.set((await stats())?.depth ?? Number.NaN); },
    });
    new Gauge({
      name: 'codefleet_queue_dead_letters', help: 'Jobs in the dead-letter queue.', registers: [this.registry],
      async collect() { this.set((await stats())?.deadLetter ?? Number.NaN); },
    });
  }

  claimSucceeded(): void {
    this.#lastClaimOk = this.#now();
    this.#lastClaimError = undefined;
  }

  claimFailed(error: unknown): void {
    this.#lastClaimError = { at: this.#now(), message: error instanceof Error ? error.message : String(error) };
  }

  jobStarted(): void {
    this.#inFlight += 1;
    this.#inFlightGauge.set(this.#inFlight);
  }

  jobSettled(settlement: Settlement | 'settle_failed', run: RunRecord | undefined, attempt: number): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    this.#inFlightGauge.set(this.#inFlight);
    // A busy slot freed: the next claim starts the staleness clock afresh.
    this.#lastClaimOk = Math.max(this.#lastClaimOk, this.#now());
    this.#jobs.inc({ settlement, outcome: run?.outcome ?? 'none' });
    this.#attempts.observe(attempt);
    if (!run) return;
    // This attempt's stages: from its last `preparing` on, each until the next one.
    const stages = run.stages;
    const start = stages.map((s) => s.stage).lastIndexOf('preparing');
    for (let i = Math.max(0, start); i + 1 < stages.length; i += 1) {
      const from = Date.parse(stages[i]!.at);
      const to = Date.parse(stages[i + 1]!.at);
      if (Number.isFinite(from) && Number.isFinite(to) && to >= from) this.#stages.observe({ stage: stages[i]!.stage }, (to - from) / 1_000);
    }
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
