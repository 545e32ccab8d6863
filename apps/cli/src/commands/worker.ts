import { maskSecrets } from '@codefleet/log';
import { queueSettingsFromConfig } from '@codefleet/queue';
import { utcDay } from '@codefleet/store';
import { runWorkerProcess, type WorkerProcessOptions, type WorkerProcessResult } from '@codefleet/worker';
import { defaultAgentReadiness } from '../agent-check.js';
import { progressReporter } from '../progress.js';
import { requireFleetKey, type Runtime } from '../runtime.js';
import { workerIdentity } from '../worker-identity.js';
import { storeHousekeeping } from '../retention.js';

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

/** How long `worker --once` waits for a queue that does not answer before it gives up. */
export const onceGiveUpMs = 30_000;

/** What the worker did; `unsuccessful` counts jobs that ended failed (any outcome but succeeded) or dead-lettered. */
export type WorkResult = WorkerProcessResult;

/**
 * `codefleet worker`: consumes the queue until SIGTERM/SIGINT (graceful drain) or, with
 * `once`, until the queue is empty. The worker's lifecycle is `runWorkerProcess`'s; this
 * builds its parts from the runtime's config.
 */
export async function work(rt: Runtime, options: WorkOptions): Promise<WorkResult> {
  // A worker without the fleet key could verify nothing: it does not start.
  requireFleetKey(rt);
  const progress = options.progress
    ? progressReporter({ log: rt.log, mask: (text) => maskSecrets(text, rt.secrets) })
    : undefined;
  const port = rt.config.worker.metrics_port;
  // The pipeline (agents, verification, forge) loads with the first job, not before.
  const pipeline = async () => Promise.all([import('@codefleet/pipeline'), rt.pipeline()]);
  try {
    return await runWorkerProcess({
      queue: rt.queue,
      runJob: async (ctx) => {
        const [{ runJob }, deps] = await pipeline();
        return runJob(deps, ctx);
      },
      worker: workerSettings(rt, options, progress),
      start: () => startUp(rt, options),
      ...(port === undefined
        ? {}
        : {
            monitor: {
              port,
              host: rt.config.worker.metrics_host,
              // The fleet's live workers: the run store's worker registry, read at scrape time.
              liveWorkers: async () => (await rt.store.listWorkers()).length,
              spentToday: () => rt.store.spentOn(utcDay(new Date())),
            },
          }),
      sweep: async () => (await rt.workspaces()).sweep(() => true),
      housekeeping: storeHousekeeping(rt, { cache: true }),
      deadLetters: {
        store: rt.store,
        // The pipeline (and the forge) load only when something needs reporting.
        report: async (letters) => {
          const [{ reportDeadLetters }, deps] = await pipeline();
          await reportDeadLetters(deps, letters);
        },
      },
      onUnsignedJob: (listener) => rt.onUnsignedJob(listener),
      exitNow: (code) => {
        progress?.done();
        (options.exitNow ?? ((exit: number) => process.exit(exit)))(code);
      },
    });
  } finally {
    progress?.done();
  }
}

/** runWorker's settings from the config and the command's options. */
function workerSettings(
  rt: Runtime,
  options: WorkOptions,
  progress: ReturnType<typeof progressReporter> | undefined,
): WorkerProcessOptions['worker'] {
  const concurrency = options.concurrency ?? rt.config.worker.concurrency;
  const identity = workerIdentity(rt.config, rt.store, concurrency);
  const giveUpAfterMs = options.giveUpAfterMs ?? (options.once ? onceGiveUpMs : undefined);
  return {
    workerId: identity.id,
    // Its entry shows each job's last output lines: secrets masked as in the log.
    registry: { ...identity.registry, mask: (text) => maskSecrets(text, rt.secrets) },
    concurrency,
    heartbeatMs: rt.config.queue.heartbeat_seconds * 1000,
    shutdownGraceMs: rt.config.worker.shutdown_grace_seconds * 1000,
    once: options.once ?? false,
    // SQS bills each receive: an idle slot waits at SQS for queue.sqs.wait_time_seconds
    // (a long poll, cut short by shutdown) instead of asking again every second.
    ...(rt.config.queue.backend === 'sqs' && rt.config.queue.sqs.wait_time_seconds > 0
      ? { claimWaitMs: rt.config.queue.sqs.wait_time_seconds * 1000 }
      : {}),
    log: rt.log,
    // The task lease lives as long as the queue's lease would without heartbeats.
    leases: { store: rt.store, ttlMs: queueSettingsFromConfig(rt.config).leaseMs },
    ...(progress ? { onProgress: progress.onProgress, onOutput: progress.onOutput } : {}),
    ...(giveUpAfterMs === undefined ? {} : { giveUpAfterMs }),
    // The fleet's daily budget: claiming pauses once the day's spend reaches it.
    ...(rt.config.costs.budget_usd.day === undefined
      ? {}
      : { dayBudget: { ledger: rt.store, limitUsd: rt.config.costs.budget_usd.day } }),
  };
}

/**
 * Before the first claim: says how agents will run (the sandbox, and whether the default
 * agent can start in it) and serves the dashboard when asked. Resolves what to close.
 */
async function startUp(rt: Runtime, options: WorkOptions): Promise<(() => Promise<void>) | undefined> {
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
  if (options.dashboardPort === undefined) return undefined;
  const { mountDashboard } = await import('./dashboard.js');
  const dashboard = await mountDashboard(rt, { port: options.dashboardPort }, options.out ?? (() => undefined));
  return () => dashboard.close();
}
