import { mkdirSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import type { LoadedConfig, Config } from '@codefleet/config';
import { classify, CodefleetError } from '@codefleet/core';
import { createLogger, resolveLogFormat, SecretRegistry, type Logger, type LogFormat } from '@codefleet/log';
import type { PipelineDeps } from '@codefleet/pipeline';
import type { Requester } from '@codefleet/requester';
import {
  openQueue,
  queueSettingsFromConfig,
  signedQueue,
  type JobSigning,
  type Queue,
  type QueueSettings,
  type UnsignedJob,
} from '@codefleet/queue';
import { RedisRunStore, SqliteRunStore, type RunIndexEvent, type RunStore } from '@codefleet/store';
import { isWithin, type Sandbox, type SandboxSettings } from '@codefleet/sandbox';
import type { WorkspaceManager } from '@codefleet/workspace';
import { loadFleetKeys, type FleetKeys } from './fleet-key.js';
import { fsProblem } from './fs-problem.js';
import { lazyParts, once } from './runtime-lazy.js';
import type { RuntimeForge } from './pipeline-deps.js';

/**
 * Everything a command needs, opened once from the loaded config. The queue and the store
 * open at once; the forge, the working copies and the pipeline load on first use, so a
 * worker waiting for jobs holds neither their code nor their connections.
 */
export interface Runtime {
  loaded: LoadedConfig;
  config: Config;
  log: Logger;
  /** The jobs' queue: it signs what is enqueued and refuses, at claim, what does not verify. */
  queue: Queue;
  /** A producer's side queue (recorded deliveries, kept follow-ups), signed like `queue`. */
  openQueue(settings: QueueSettings): Promise<Queue>;
  /** The fleet key this host holds (or why none): doctor and the start checks read it. */
  fleetKeys: FleetKeys;
  /** Told of every job a claim refused as unsigned (after its log line): the worker's metric. */
  onUnsignedJob(listener: (job: UnsignedJob) => void): void;
  store: RunStore;
  forge(): Promise<RuntimeForge>;
  /** Where jobs are reported back (issue, LINE, callback, CLI), opened on first use. */
  requester(): Promise<Requester>;
  /** The config's secrets and every token minted since: what logs and reports mask. */
  secrets: SecretRegistry;
  workspaces(): Promise<WorkspaceManager>;
  pipeline(): Promise<PipelineDeps>;
  /** The sandbox jobs run in, opened (and checked) on first use. */
  sandbox(): Promise<Sandbox>;
  close(): Promise<void>;
}

/**
 * Names of the environment variables git needs; no forge credentials (the local forge needs
 * none). The proxy and CA variables are how a host behind a proxy reaches GitHub: git calls
 * that carry the token do not read ~/.gitconfig, which an agent can write.
 */
const gitEnvNames = [
  'PATH',
  'HOME',
  'LANG',
  'LC_ALL',
  'TMPDIR',
  'USER',
  'GIT_CONFIG_GLOBAL',
  'GIT_CONFIG_NOSYSTEM',
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  'http_proxy',
  'https_proxy',
  'all_proxy',
  'no_proxy',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'ALL_PROXY',
  'NO_PROXY',
  'GIT_SSL_CAINFO',
  'GIT_SSL_CAPATH',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
];

/** The environment of git calls: a small allowlist, prompts off. */
export function gitEnvFrom(env: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = { GIT_TERMINAL_PROMPT: '0' };
  for (const name of gitEnvNames) {
    const value = env[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * The sandbox as the config describes it. Always hidden from runs: the data directory (other
 * jobs' copies, mirrors, the queue, token files), the working-copy cache, the fleet key files,
 * the config file and HOME. Always shown read-only: the script agent's own directory (the operator's code).
 */
export function sandboxSettings(loaded: LoadedConfig): SandboxSettings {
  const { config, env } = loaded;
  const script = config.agents.script.module;
  // The fleet key files too, wherever they are configured: a run that read the key could sign jobs.
  const keyFiles = [
    config.signing.key_file,
    ...(config.signing.previous_key_file === undefined ? [] : [config.signing.previous_key_file]),
  ];
  const hidden = [
    config.data_dir,
    config.workspace.cache_dir,
    ...keyFiles,
    ...(loaded.source === undefined ? [] : [loaded.source]),
    ...(env.HOME === undefined ? [] : [env.HOME]),
  ];
  // The script agent's directory, unless that would show something hidden (a module kept
  // directly in HOME, or beside the data directory): then the module file alone.
  const scriptPath =
    script === undefined || !isAbsolute(script)
      ? []
      : [hidden.some((path) => isWithin(dirname(script), path)) ? script : dirname(script)];
  return {
    mode: config.sandbox.mode,
    network: config.sandbox.network,
    limits: {
      processes: config.sandbox.limits.processes,
      memoryMb: config.sandbox.limits.memory_mb,
      tmpMb: config.sandbox.limits.tmp_mb,
      tmpFiles: config.sandbox.limits.tmp_files,
      shmMb: config.sandbox.limits.shm_mb,
      openFiles: config.sandbox.limits.open_files,
      cpuSeconds: config.sandbox.limits.cpu_seconds,
      fileSizeMb: config.sandbox.limits.file_size_mb,
    },
    // Directories runs get in front of PATH must be there to run from.
    readPaths: [
      ...config.sandbox.read_paths,
      ...config.verification.env.path,
      ...config.agents.env.path,
      ...scriptPath,
    ],
    hiddenPaths: [...hidden, ...config.sandbox.hidden_paths],
    runRoot: join(config.data_dir, 'sandbox'),
    ...(config.sandbox.container.image === undefined
      ? {}
      : { container: { runtime: config.sandbox.container.runtime, image: config.sandbox.container.image } }),
  };
}

/** How long a one-shot command waits for the run store's Redis before saying it is down. */
const storeConnectTimeoutMs = 5_000;

/** Options of {@link openRuntime}. */
export interface RuntimeOptions {
  log?: Logger;
  /**
   * A worker or producer: the run store waits through a Redis restart. Otherwise (runs,
   * show, doctor, ...) it fails fast with `store_unavailable` when Redis cannot be reached.
   */
  longRunning?: boolean;
}

/**
 * Creates `data_dir` if needed. The SQLite files (forge, runs, local queue) live there; a
 * fleet using Redis still has a local forge and caches on each host. Throws
 * `invalid_config` naming the directory when it cannot be one.
 */
export function openDataDir(config: Config): void {
  try {
    mkdirSync(config.data_dir, { recursive: true });
  } catch (error) {
    throw new CodefleetError(
      'invalid_config',
      `data_dir: ${config.data_dir} is not a usable directory (${fsProblem(error)}); set data_dir in config.yaml (or CODEFLEET_DATA_DIR) to a writable directory`,
      { cause: error },
    );
  }
}

/**
 * Refuses to start a worker or producer without the fleet key (a fleet backend whose key
 * was not shared to this host): `invalid_config` naming how to make and share one.
 */
export function requireFleetKey(rt: Pick<Runtime, 'fleetKeys'>): void {
  if ('problem' in rt.fleetKeys) throw new CodefleetError('invalid_config', rt.fleetKeys.problem);
}

/** Where the local queue keeps its jobs, when it is the local one. */
export function localQueuePath(config: Config): string | undefined {
  return config.queue.backend === 'local' ? config.queue.local.path : undefined;
}

/** Where the SQLite run store keeps its records, when the store is SQLite. */
export function runStorePath(config: Config): string | undefined {
  return config.store.backend === 'sqlite' ? join(config.data_dir, 'runs.sqlite') : undefined;
}

/**
 * Opens the configured queue; a local queue file that cannot be opened is `queue_unavailable`
 * naming it. A damaged one says so itself, with the fix.
 */
export async function openConfiguredQueue(config: Config): Promise<Queue> {
  const path = localQueuePath(config);
  try {
    return await openQueue(queueSettingsFromConfig(config));
  } catch (error) {
    if (path === undefined || classify(error).verdict === 'permanent') throw error;
    throw new CodefleetError('queue_unavailable', `the local queue ${path} cannot be opened: ${fsProblem(error)}`, {
      cause: error,
    });
  }
}

/**
 * Opens the configured run store; a SQLite file that cannot be opened is `store_unavailable`
 * naming it. A store written before the run indexes is migrated once (at open on SQLite, at the
 * first read on Redis): `log` says when it starts and how long it took.
 */
export function openConfiguredStore(config: Config, options: { longRunning?: boolean; log?: Logger } = {}): RunStore {
  const onIndexMigration = options.log === undefined ? undefined : indexMigrationLog(options.log);
  if (config.store.backend === 'redis') {
    return new RedisRunStore({
      url: config.store.redis_url,
      prefix: config.store.prefix,
      ...(options.longRunning ? {} : { connectTimeoutMs: storeConnectTimeoutMs }),
      ...(onIndexMigration === undefined ? {} : { onIndexMigration }),
    });
  }
  const path = runStorePath(config) ?? join(config.data_dir, 'runs.sqlite');
  try {
    return new SqliteRunStore(path, onIndexMigration === undefined ? {} : { onIndexMigration });
  } catch (error) {
    // A damaged file's error already names it and the fix.
    if (error instanceof CodefleetError) throw error;
    throw new CodefleetError('store_unavailable', `the run store ${path} cannot be opened: ${fsProblem(error)}`, {
      cause: error,
    });
  }
}

/**
 * Standard output, where log lines go. Pretty lines on a terminal first clear the row: a
 * worker's status line (stderr, the same terminal) may be on it, and is redrawn below.
 */
function logDestination(format: LogFormat): { write(line: string): unknown } {
  const stdout = process.stdout;
  return format === 'pretty' && stdout.isTTY ? { write: (line: string) => stdout.write(`\r\x1b[2K${line}`) } : stdout;
}

/** The logger of a command: the config's level and format, secrets masked, tagged with the worker id. */
function runtimeLogger(config: Config, secrets: SecretRegistry): Logger {
  const format = resolveLogFormat(config.logging.format, process.stdout);
  return createLogger({
    level: config.logging.level,
    format,
    secrets,
    base: { worker_id: config.worker.worker_id },
    destination: logDestination(format),
  });
}

/** How queues sign jobs and refuse unsigned ones: each refusal is logged, then told to `listeners`. */
function jobSigning(fleetKeys: FleetKeys, log: Logger, listeners: Set<(job: UnsignedJob) => void>): JobSigning {
  return {
    keyring: 'keyring' in fleetKeys ? fleetKeys.keyring : { problem: fleetKeys.problem },
    onUnsigned: (job) => {
      log.error(
        { event: 'job.unsigned', job_id: job.jobId, queue: job.queue, why: job.why, reason: job.reason },
        `refused job ${job.jobId}: ${job.reason}; dead-lettered, not run (written into the queue by hand?)`,
      );
      for (const listener of listeners) listener(job);
    },
  };
}

/** The log lines of a run store's one-time index migration. */
function indexMigrationLog(log: Logger): (event: RunIndexEvent) => void {
  return (event) => {
    if (event.event === 'started')
      log.info(
        { event: 'store.index_migration_started', store: event.store, schema: event.schema },
        `indexing the ${event.store} run store's runs for schema ${event.schema}, once; reads wait until it is done`,
      );
    else
      log.info(
        {
          event: 'store.index_migrated',
          store: event.store,
          schema: event.schema,
          runs: event.runs,
          duration_ms: event.durationMs,
        },
        `indexed ${event.runs} runs of the ${event.store} run store in ${event.durationMs} ms`,
      );
  };
}

/** Opens the run store; when it cannot be opened, the queue already opened is closed first. */
async function openStoreBeside(queue: Queue, config: Config, options: RuntimeOptions): Promise<RunStore> {
  try {
    return openConfiguredStore(config, options);
  } catch (error) {
    await queue.close();
    throw error;
  }
}

/**
 * Opens the queue and the store the config describes, and readies the rest to load on
 * first use. On GitHub the forge opens now, so a missing token or bad App credentials
 * fail the command at start, not its first job.
 */
export async function openRuntime(loaded: LoadedConfig, options: RuntimeOptions = {}): Promise<Runtime> {
  const { config, env } = loaded;
  // The config's secrets, and every token minted at run time (GitHub App installation
  // tokens) as it is minted: logs, run records and comments mask them all.
  const secrets = new SecretRegistry(loaded.secrets);
  const log = options.log ?? runtimeLogger(config, secrets);
  openDataDir(config);
  // A local queue is a fleet of one host: its key is made on first start. A fleet backend
  // needs the key every host shares; without it enqueue and claim fail naming the fix.
  const fleetKeys = loadFleetKeys(config, { create: config.queue.backend === 'local' });
  const unsignedListeners = new Set<(job: UnsignedJob) => void>();
  const signing = jobSigning(fleetKeys, log, unsignedListeners);
  const queue = signedQueue(await openConfiguredQueue(config), config.queue.name, signing);
  // Services log the run store's one-time index migration; a one-shot command's stdout (where
  // log lines go) is its answer, `runs --json` say, so there it happens without a line.
  const store = await openStoreBeside(queue, config, { ...options, ...(options.longRunning ? { log } : {}) });
  const sandbox = once(async () => {
    const { openSandbox } = await import('@codefleet/sandbox');
    return openSandbox(sandboxSettings(loaded), { platform: process.platform, path: env.PATH ?? '' });
  });
  const parts = lazyParts({ loaded, log, secrets, store, gitEnv: () => gitEnvFrom(env), sandbox });
  const runtime: Runtime = {
    loaded,
    config,
    log,
    queue,
    store,
    secrets,
    fleetKeys,
    openQueue: async (settings) => signedQueue(await openQueue(settings), settings.name, signing),
    onUnsignedJob: (listener) => {
      unsignedListeners.add(listener);
    },
    forge: parts.forge,
    requester: parts.requester,
    workspaces: parts.workspaces,
    pipeline: parts.pipeline,
    sandbox,
    close: async () => {
      await queue.close();
      await store.close();
      await parts.closeForge();
    },
  };
  if (config.forge.type === 'github') {
    try {
      await runtime.forge();
    } catch (error) {
      await runtime.close();
      throw error;
    }
  }
  return runtime;
}
