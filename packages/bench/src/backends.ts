import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFauxqs } from 'fauxqs';
import { loadConfig } from '@codefleet/config';
import { fleetKey } from '@codefleet/core';
import { openQueue, queueSettingsFromConfig, signedQueue, type Queue } from '@codefleet/queue';
import { RedisRunStore, SqliteRunStore, type RunStore } from '@codefleet/store';
import {
  gitTestEnv,
  startCountingProxy,
  startRedis,
  testFleetKey,
  testFleetKeyEnv,
  type CountingProxy,
  type RedisServer,
} from '@codefleet/testkit';

/** The queue backends the bench measures. */
export const backends = ['local', 'bullmq', 'sqs'] as const;
export type Backend = (typeof backends)[number];

/** How each backend is run: what a one-host or fleet deployment would configure. */
export const backendLabel: Record<Backend, string> = {
  local: 'SQLite (local queue, SQLite run store)',
  bullmq: 'BullMQ (redis-server, Redis run store)',
  sqs: 'SQS (fauxqs emulator, Redis coordination and run store)',
};

/** The services one backend needs, started for one measurement, and its config.yaml lines. */
export interface BackendServices {
  readonly backend: Backend;
  readonly redis?: RedisServer;
  /** SQS only: the counting proxy workers reach the emulator through. */
  readonly sqsProxy?: CountingProxy;
  /** The `queue:` and `store:` sections. */
  readonly yaml: string[];
  /** The run store as the workers open it, for reading their run records. */
  openStore(dir: string): RunStore;
  stop(): Promise<void>;
}

/** Starts what `backend` needs on loopback: nothing (SQLite), a redis-server, or the SQS emulator and a redis-server. */
export async function startBackend(backend: Backend): Promise<BackendServices> {
  if (backend === 'local') {
    return {
      backend,
      yaml: ['queue:', '  backend: local', '  name: bench', 'store:', '  backend: sqlite'],
      openStore: (dir) => new SqliteRunStore(join(dir, 'data', 'runs.sqlite')),
      stop: async () => undefined,
    };
  }
  const redis = await startRedis();
  const store = ['store:', '  backend: redis', `  redis_url: ${redis.url}`, '  prefix: bench'];
  const openStore = () => new RedisRunStore({ url: redis.url, prefix: 'bench' });
  if (backend === 'bullmq') {
    return {
      backend,
      redis,
      openStore,
      stop: () => redis.stop(),
      yaml: [
        'queue:',
        '  backend: bullmq',
        '  name: bench',
        '  bullmq:',
        `    url: ${redis.url}`,
        '    prefix: bench',
        ...store,
      ],
    };
  }
  const sqs = await startFauxqs({ port: 0, logger: false });
  const proxy = await startCountingProxy(sqs.address);
  const queueUrl = sqs.createQueue('bench').queueUrl;
  return {
    backend,
    redis,
    sqsProxy: proxy,
    openStore,
    yaml: [
      'queue:',
      '  backend: sqs',
      '  name: bench',
      '  sqs:',
      `    queue_url: ${queueUrl}`,
      `    endpoint: ${proxy.url}`,
      '    region: us-east-1',
      `    coordination_url: ${redis.url}`,
      ...store,
    ],
    stop: async () => {
      await proxy.close();
      await sqs.stop();
      await redis.stop();
    },
  };
}

/** The environment of the codefleet processes: a hermetic one, as chaos gives its workers. */
export function processEnv(dir: string, hostPath: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: hostPath,
    HOME: dir,
    ...gitTestEnv(),
    ...testFleetKeyEnv(),
    // Only the emulator sees these; any key works there.
    AWS_ACCESS_KEY_ID: 'emulator',
    AWS_SECRET_ACCESS_KEY: 'emulator',
    AWS_REGION: 'us-east-1',
    ...extra,
  };
}

/** Writes `<dir>/config.yaml` from its lines; returns its path. */
export function writeConfig(dir: string, lines: string[]): string {
  const path = join(dir, 'config.yaml');
  writeFileSync(path, `${['data_dir: ./data', ...lines].join('\n')}\n`);
  return path;
}

/**
 * A `command` agent running `script` with `sh -c` in the job's copy: an agent that starts
 * in about a millisecond, so what is measured before it is codefleet's.
 */
export function shellAgent(script: string): string[] {
  return ['agents:', '  default: command', '  command:', `    argv: ${JSON.stringify(['sh', '-c', script])}`];
}

/** The jobs' queue as the workers open it, from their config, for enqueueing directly. */
export async function openBenchQueue(config: string, dir: string): Promise<Queue> {
  const loaded = await loadConfig({ path: config, cwd: dir, env: {} });
  const settings = queueSettingsFromConfig(loaded.config);
  const queue = await openQueue(
    settings.backend === 'sqs'
      ? { ...settings, credentials: { accessKeyId: 'emulator', secretAccessKey: 'emulator' } }
      : settings,
  );
  // Signed with the fleet key the workers hold (processEnv), as every producer's jobs are;
  // the bench only enqueues through it, so nothing is refused here.
  return signedQueue(queue, settings.name, {
    keyring: { current: fleetKey(testFleetKey) },
    onUnsigned: () => undefined,
  });
}
