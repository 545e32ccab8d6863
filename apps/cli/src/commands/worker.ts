import { classify, isTerminal } from '@codefleet/core';
import { maskSecrets } from '@codefleet/log';
import { queueSettingsFromConfig } from '@codefleet/queue';
import { latestRun, utcDay } from '@codefleet/store';
import {
  runWorker,
  startMonitorServer,
  WorkerMonitor,
  type MonitorServer,
  type WorkerEvents,
  type WorkerSummary,
} from '@codefleet/worker';
import { defaultAgentReadiness } from '../agent-check.js';
import { progressReporter } from '../progress.js';
import { requireFleetKey, type Runtime } from '../runtime.js';
import { workerIdentity } from '../worker-identity.js';

/** Options of {@link work}. */
export interface WorkOptions {
  concurrency?: number;
  once?: boolean;
  progress?: boolean;
  /** Also serve the dashboard on this port (0: a free one) in this process. */
  dashboardPort?: number;
  /** Where the dashboard's address (and a generated token) is printed. */
  out?: (line: string) => void;
  /** Stop with `queue_unavailable` after the queue has not answered this long; default {@link onceGiveUpMs} with `once`, else never. */
  giveUpAfterMs?: number;
  /** Ends the process at once (a second SIGINT); default `process.exit`. */
  exitNow?: (code: number) => void;
}

/** The exit code of a process stopped by SIGINT (128 + 2), as shells report it. */
export const interruptedExitCode = 130;

/** How long `worker --once` waits for a queue that does not answer before it gives up. */
export const onceGiveUpMs = 30_000;

/** What the worker did; `unsuccessful` counts jobs that ended failed (any outcome but succeeded) or dead-lettered. */
export type WorkResult = WorkerSummary & { unsuccessful: number };

/**
 * `codefleet worker`: consumes the queue until SIGTERM/SIGINT (graceful drain) or, with
 * `once`, until the queue is empty.
 */
export async function work(rt: Runtime, options: WorkOptions): Promise<WorkResult> {
  // A worker without the fleet key could verify nothing: it does not start.
  requireFleetKey(rt);
  // A damaged queue file is found before the first claim (it reads the whole file once).
  await rt.queue.checkStorage?.();
  const shutdown = new AbortController();
  const progress = options.progress
    ? progressReporter({ log: rt.log, mask: (text) => maskSecrets(text, rt.secrets) })
    : undefined;
  // `on`, not `once`: a second SIGTERM while draining (a supervisor that repeats it, a
  // resumed SIGSTOP that delivers what piled up) must not kill the process mid-drain, which
  // would leave its working copies locked and its leases to expire. A second Ctrl-C is a
  // person who will not wait: that stops now (agents and checks die with the process), and
  // the jobs are redelivered when their leases expire.
  const stop = (signal: NodeJS.Signals) => {
    if (!shutdown.signal.aborted) {
      shutdown.abort();
      if (signal === 'SIGINT')
        rt.log.warn({ event: 'worker.interrupted' }, 'draining: running jobs may finish; Ctrl-C again to stop now');
    } else if (signal === 'SIGINT') {
      progress?.done();
      rt.log.warn(
        { event: 'worker.stopped_now', signal },
        'SIGINT again: stopping now; running jobs are redelivered when their leases expire',
      );
      (options.exitNow ?? ((code: number) => process.exit(code)))(interruptedExitCode);
    } else {
      rt.log.warn({ event: 'worker.signal_again', signal }, `${signal} again: still draining`);
    }
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // Agents and repository commands never run outside the configured sandbox: without it the
  // worker does not start, and the fix is named. `none` is allowed when set explicitly, and
  // said plainly.
  const sandbox = await rt.sandbox();
  if (sandbox.mode === 'none') rt.log.warn({ event: 'sandbox.none', mode: sandbox.mode }, sandbox.description);
  else rt.log.info({ event: 'sandbox.ready', mode: sandbox.mode }, sandbox.description);
  // Said once at start, not discovered by dead-lettering the first job (jobs naming
  // another agent may still run, so the worker does not refuse to start). Checked in the
  // sandbox: a program only the host's HOME holds cannot start there.
  const agent = await defaultAgentReadiness(rt.loaded, sandbox);
  if (agent !== undefined && !agent.ok) {
    rt.log.error(
      { event: 'agent.unusable', agent: rt.config.agents.default, fix: agent.fix },
      `${agent.what}: jobs for it will fail; ${agent.fix}`,
    );
  }
  const concurrency = options.concurrency ?? rt.config.worker.concurrency;
  // Health and metrics only with a port to serve them on (prom-client is loaded then).
  let monitor: WorkerMonitor | undefined;
  let server: MonitorServer | undefined;
  const port = rt.config.worker.metrics_port;
  if (port !== undefined) {
    // A claim may long-poll SQS for 20 s: staleness is judged over a few of those.
    // The fleet's live workers: the run store's worker registry, read at scrape time.
    const liveWorkers = async () => (await rt.store.listWorkers()).length;
    const spentToday = () => rt.store.spentOn(utcDay(new Date()));
    monitor = await WorkerMonitor.create(
      { queue: rt.queue, staleAfterMs: 60_000, liveWorkers, spentToday },
      concurrency,
    );
    server = await startMonitorServer(monitor, { port, host: rt.config.worker.metrics_host });
    rt.log.info(
      { event: 'monitor.listening', port: server.port },
      `health and metrics on http://${rt.config.worker.metrics_host}:${server.port}/healthz and /metrics`,
    );
  }
  const dashboard =
    options.dashboardPort === undefined
      ? undefined
      : await (
          await import('./dashboard.js')
        ).mountDashboard(rt, { port: options.dashboardPort }, options.out ?? (() => undefined));
  // Free what crashed workers on this host left behind: copies whose lock holder is dead.
  // Copies of live processes (other workers here) are theirs, so every job counts as running.
  const swept = await rt
    .workspaces()
    .then((workspaces) => workspaces.sweep(() => true))
    .catch((err: unknown) => {
      rt.log.warn({ err, event: 'workspace.sweep_failed' }, 'could not sweep working copies');
      return { removed: [], released: [] };
    });
  if (swept.removed.length + swept.released.length > 0) {
    rt.log.info(
      { event: 'workspace.swept', removed: swept.removed.length, released: swept.released.length },
      'freed working copies of stopped workers',
    );
  }
  // Jobs dead-lettered without their run finishing (a worker died on their last attempt)
  // were reported by nobody: whichever worker looks first reports them, at start, every
  // few minutes, and at the end of --once.
  const reportDead = () =>
    reportUnfinishedDeadLetters(rt).catch((err: unknown) => {
      rt.log.warn({ err, event: 'dead_letter.check_failed' }, 'could not check the dead-letter queue');
    });
  await reportDead();
  const deadLetterTimer = setInterval(() => void reportDead(), deadLetterCheckMs);
  deadLetterTimer.unref();
  // A claim that fails for good (a queue file damaged while the worker runs) would fail the
  // same way every second: the worker drains and ends with that error instead.
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
      rt.log.error(
        { err: error, event: 'worker.stopping', code: classify(error).code },
        'a claim failed for good: stopping the worker',
      );
      shutdown.abort();
    },
  );
  // A refused unsigned job is counted (the claim already logged it) and makes --once fail.
  rt.onUnsignedJob((job) => {
    unsuccessful += 1;
    monitor?.jobUnsigned(job.why);
  });
  const identity = workerIdentity(rt.config, rt.store, concurrency);
  const giveUpAfterMs = options.giveUpAfterMs ?? (options.once ? onceGiveUpMs : undefined);
  try {
    // The pipeline (agents, verification, forge) loads with the first job, not before.
    const pipeline = async () => Promise.all([import('@codefleet/pipeline'), rt.pipeline()]);
    const summary = await runWorker(
      rt.queue,
      async (ctx) => {
        const [{ runJob }, deps] = await pipeline();
        return runJob(deps, ctx);
      },
      {
        workerId: identity.id,
        registry: identity.registry,
        concurrency,
        events,
        heartbeatMs: rt.config.queue.heartbeat_seconds * 1000,
        shutdownGraceMs: rt.config.worker.shutdown_grace_seconds * 1000,
        once: options.once ?? false,
        // SQS bills each receive: an idle slot waits at SQS for queue.sqs.wait_time_seconds
        // (a long poll, cut short by shutdown) instead of asking again every second.
        ...(rt.config.queue.backend === 'sqs' && rt.config.queue.sqs.wait_time_seconds > 0
          ? { claimWaitMs: rt.config.queue.sqs.wait_time_seconds * 1000 }
          : {}),
        shutdown: shutdown.signal,
        log: rt.log,
        // The task lease lives as long as the queue's lease would without heartbeats.
        leases: { store: rt.store, ttlMs: queueSettingsFromConfig(rt.config).leaseMs },
        ...(progress ? { onProgress: progress.onProgress, onOutput: progress.onOutput } : {}),
        ...(giveUpAfterMs === undefined ? {} : { giveUpAfterMs }),
        // The fleet's daily budget: claiming pauses once the day's spend reaches it.
        ...(rt.config.costs.budget_usd.day === undefined
          ? {}
          : { dayBudget: { ledger: rt.store, limitUsd: rt.config.costs.budget_usd.day } }),
      },
    );
    if (fatal) throw fatal.error;
    if (options.once) await reportDead();
    return { ...summary, unsuccessful };
  } finally {
    clearInterval(deadLetterTimer);
    progress?.done();
    await server?.close();
    await dashboard?.close();
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
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

/** How often a worker looks for dead letters nobody reported. */
const deadLetterCheckMs = 5 * 60_000;

/**
 * Reports the dead letters whose job has no finished run (see `reportDeadLetters` in the
 * pipeline). The check is a queue listing and a store read per dead letter; the pipeline
 * (and the forge) load only when something needs reporting.
 */
async function reportUnfinishedDeadLetters(rt: Runtime): Promise<void> {
  const dead = await rt.queue.deadLetters({ limit: 100 });
  const unreported = [];
  // A dead letter lists its job only when it verifies (the signed queue): a forged one is never reported.
  for (const letter of dead) {
    if (letter.job === undefined) continue;
    const { run } = await latestRun(rt.store, letter.job.id);
    if (run === undefined || !isTerminal(run.stage)) unreported.push(letter);
  }
  if (unreported.length === 0) return;
  const [{ reportDeadLetters }, deps] = await Promise.all([import('@codefleet/pipeline'), rt.pipeline()]);
  await reportDeadLetters(deps, unreported);
}
