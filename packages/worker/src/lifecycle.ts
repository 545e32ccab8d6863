import { classify } from '@codefleet/core';
import type { Queue, UnsignedJob } from '@codefleet/queue';
import { deadLetterCheckMs, reportUnfinishedDeadLetters, type DeadLetterReporting } from './dead-letters.js';
import { startMonitorServer } from './http.js';
import { WorkerMonitor, type WorkerEvents } from './monitor.js';
import { drainOnSignals } from './signals.js';
import type { WorkerSummary } from './settle.js';
import { runWorker, type JobRunner, type WorkerOptions } from './worker.js';
import { startHousekeeping, type Housekeeping, type HousekeepingOptions } from './retention.js';

/** What a worker process is made of; the CLI's `codefleet worker` builds it from the config. */
export interface WorkerProcessOptions {
  queue: Queue;
  runJob: JobRunner;
  /** runWorker's options, but the shutdown signal and the events, which the process owns. */
  worker: Omit<WorkerOptions, 'shutdown' | 'events'>;
  /**
   * Runs after signals are handled and before anything else starts (start-up checks, a
   * server of the caller's); resolves what to close when the worker ends, if anything.
   */
  start?: () => Promise<(() => Promise<void>) | undefined>;
  /** Serves health and metrics on this port (prom-client is loaded only then). */
  monitor?: {
    port: number;
    host: string;
    /** The fleet's live workers, read at scrape time. */
    liveWorkers: () => Promise<number>;
    /** What the fleet spent today, read at scrape time. */
    spentToday: () => Promise<number>;
  };
  /** Frees what crashed workers on this host left behind (working copies whose lock holder is dead). */
  sweep?: () => Promise<{ removed: readonly unknown[]; released: readonly unknown[] }>;
  /** Background chores (retention, cache limits), run while the worker runs; see {@link startHousekeeping}. */
  housekeeping?: Omit<HousekeepingOptions, 'log' | 'onTrimmed'>;
  /** Dead letters nobody reported: reported at start, every few minutes, and at the end of `once`. */
  deadLetters?: DeadLetterReporting;
  /** Subscribes to the jobs the queue refused as unsigned (the signed queue). */
  onUnsignedJob?: (listener: (job: UnsignedJob) => void) => void;
  /** Ends the process at once (a second SIGINT); default `process.exit`. */
  exitNow?: (code: number) => void;
}

/** What the worker did; `unsuccessful` counts jobs that ended failed (any outcome but succeeded) or dead-lettered. */
export type WorkerProcessResult = WorkerSummary & { unsuccessful: number };

/**
 * A worker process from start to stop: checks the queue's storage, drains on SIGTERM and
 * SIGINT, serves health and metrics, sweeps working copies, reports dead letters nobody
 * reported, then runs {@link runWorker} until shutdown (or, with `once`, an empty queue).
 * A claim that fails for good (a queue file damaged while the worker runs) would fail the
 * same way every second: the worker drains and rejects with that error instead.
 */
export async function runWorkerProcess(options: WorkerProcessOptions): Promise<WorkerProcessResult> {
  const { queue, worker } = options;
  const { log } = worker;
  // A damaged queue file is found before the first claim (it reads the whole file once).
  await queue.checkStorage?.();
  const shutdown = new AbortController();
  const stopSignals = drainOnSignals(shutdown, log, options.exitNow ?? ((code: number) => process.exit(code)));
  const closers: (() => Promise<void>)[] = [];
  let deadLetterTimer: NodeJS.Timeout | undefined;
  let housekeeping: Housekeeping | undefined;
  try {
    const close = await options.start?.();
    if (close) closers.push(close);
    const monitor = await startMonitor(options, closers);
    await sweepWorkspaces(options);
    if (options.housekeeping)
      housekeeping = startHousekeeping({
        ...options.housekeeping,
        log,
        ...(monitor ? { onTrimmed: (trimmed) => monitor.trimmed(trimmed) } : {}),
      });
    const reportDead = async () => {
      if (options.deadLetters) await reportUnfinishedDeadLetters(queue, options.deadLetters, log);
    };
    await reportDead();
    deadLetterTimer = setInterval(() => void reportDead(), deadLetterCheckMs);
    deadLetterTimer.unref();
    let fatal: { error: unknown } | undefined;
    let unsuccessful = 0;
    const events = stopOnPermanentClaimFailure(
      monitor,
      () => {
        unsuccessful += 1;
      },
      (error) => {
        if (fatal) return;
        fatal = { error };
        log.error(
          { err: error, event: 'worker.stopping', code: classify(error).code },
          'a claim failed for good: stopping the worker',
        );
        shutdown.abort();
      },
    );
    // A refused unsigned job is counted (the claim already logged it) and makes `once` fail.
    options.onUnsignedJob?.((job) => {
      unsuccessful += 1;
      monitor?.jobUnsigned(job.why);
    });
    const summary = await runWorker(queue, options.runJob, { ...worker, events, shutdown: shutdown.signal });
    if (fatal) throw fatal.error;
    if (worker.once) await reportDead();
    return { ...summary, unsuccessful };
  } finally {
    clearInterval(deadLetterTimer);
    await housekeeping?.stop();
    for (const close of closers) await close();
    stopSignals();
  }
}

/** Health and metrics, when a port is set; its server is closed with the worker. */
async function startMonitor(
  options: WorkerProcessOptions,
  closers: (() => Promise<void>)[],
): Promise<WorkerMonitor | undefined> {
  if (options.monitor === undefined) return undefined;
  const { port, host, liveWorkers, spentToday } = options.monitor;
  // A claim may long-poll SQS for 20 s: staleness is judged over a few of those.
  const monitor = await WorkerMonitor.create(
    { queue: options.queue, staleAfterMs: 60_000, liveWorkers, spentToday },
    options.worker.concurrency,
  );
  const server = await startMonitorServer(monitor, { port, host });
  closers.unshift(() => server.close());
  options.worker.log.info(
    { event: 'monitor.listening', port: server.port },
    `health and metrics on http://${host}:${server.port}/healthz and /metrics`,
  );
  return monitor;
}

/** Frees working copies whose lock holder is dead; copies of live processes (other workers here) are theirs. */
async function sweepWorkspaces({ sweep, worker: { log } }: WorkerProcessOptions): Promise<void> {
  if (!sweep) return;
  const swept = await sweep().catch((err: unknown) => {
    log.warn({ err, event: 'workspace.sweep_failed' }, 'could not sweep working copies');
    return { removed: [], released: [] };
  });
  if (swept.removed.length + swept.released.length > 0) {
    log.info(
      { event: 'workspace.swept', removed: swept.removed.length, released: swept.released.length },
      'freed working copies of stopped workers',
    );
  }
}

/**
 * The monitor's events, `unsuccessful` called for each job that settled without succeeding,
 * and `stop` with every claim failure whose verdict is permanent.
 */
function stopOnPermanentClaimFailure(
  monitor: WorkerEvents | undefined,
  unsuccessful: () => void,
  stop: (error: unknown) => void,
): WorkerEvents {
  return {
    claimSucceeded: () => monitor?.claimSucceeded(),
    claimFailed: (error) => {
      monitor?.claimFailed(error);
      if (classify(error).verdict === 'permanent') stop(error);
    },
    jobStarted: (job, attempt) => monitor?.jobStarted(job, attempt),
    jobSettled: (settlement, run, attempt) => {
      if (settlement === 'dead_lettered' || (settlement === 'acked' && run?.outcome !== 'succeeded')) unsuccessful();
      monitor?.jobSettled(settlement, run, attempt);
    },
  };
}
