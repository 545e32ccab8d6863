import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '@codefleet/config';
import { fleetKey } from '@codefleet/core';
import { openQueue, queueSettingsFromConfig, signedQueue, type Queue } from '@codefleet/queue';
import { RedisRunStore } from '@codefleet/store';
import { createTempRepo, git, gitTestEnv, testFleetKey, testFleetKeyEnv } from '@codefleet/testkit';

/** The chaos run's workers, as the harness starts them and as their config names them. */
export type Engine = 'bullmq' | 'sqs';

/** Short, so that a SIGSTOPped worker loses its lease within the run. */
export const leaseSeconds = 3;

// The scripted agent (no model): records its claim in the ledger, writes one file named
// after the job, and takes a while, so that kills land while jobs run.
const agentSource = (ledger: string) => `
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
// The agent's parent is the guard that kills it with its worker; the worker is one up.
const worker = Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(process.ppid)], { encoding: 'utf8' }).trim());
const args = new Map();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i], process.argv[i + 1]);
const workdir = args.get('--workdir');
const pass = args.get('--pass');
const task = fs.readFileSync(path.join(workdir, '.codefleet', 'task.md'), 'utf8');
const id = /chaos job (\\S+)/.exec(task)[1];
if (pass === 'implement') {
  fs.appendFileSync(${JSON.stringify(ledger)}, JSON.stringify({ ev: 'claim', job: id, pid: worker, at: Date.now() }) + '\\n');
  fs.mkdirSync(path.join(workdir, 'work'), { recursive: true });
  fs.writeFileSync(path.join(workdir, 'work', id + '.txt'), id + '\\n');
}
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pass === 'implement' ? 100 + Math.floor(Math.random() * 1100) : 50);
`;

// git runs this in the origin after every push: the publish side of the ledger.
const hookSource = (ledger: string) => `#!/bin/sh
while read old new ref; do
  printf '{"ev":"publish","ref":"%s","at":%s}\\n' "$ref" "$(date +%s%3N)" >> '${ledger}'
done
`;

/**
 * The origin the fleet pushes to (a bare clone of a two-file repository) with the hook that
 * writes every push into the ledger, and the scripted agent beside it. Resolves the origin.
 */
export async function prepareTarget(dir: string, ledgerPath: string): Promise<string> {
  const seed = await createTempRepo({
    files: { 'README.md': '# chaos target\n', 'package.json': '{ "name": "chaos-target", "private": true }\n' },
  });
  const origin = join(dir, 'origin.git');
  await git(dir, ['clone', '--quiet', '--bare', seed.path, origin]);
  await seed.dispose();
  writeFileSync(join(origin, 'hooks', 'post-receive'), hookSource(ledgerPath));
  chmodSync(join(origin, 'hooks', 'post-receive'), 0o755);
  writeFileSync(join(dir, 'agent.mjs'), agentSource(ledgerPath));
  return origin;
}

/** Writes the workers' `config.yaml` into `dir` for `engine` and resolves its path. */
export function writeConfig(
  dir: string,
  engine: Engine,
  backends: { redisUrl: string; queueUrl: string | undefined; sqsAddress: string | undefined },
): string {
  const queueYaml =
    engine === 'bullmq'
      ? `  bullmq:\n    url: ${backends.redisUrl}\n    prefix: chaos\n    lock_duration_ms: ${leaseSeconds * 1000}\n`
      : `  sqs:\n    queue_url: ${backends.queueUrl}\n    endpoint: ${backends.sqsAddress}\n    region: us-east-1\n    wait_time_seconds: 1\n    visibility_timeout: ${leaseSeconds}\n    coordination_url: ${backends.redisUrl}\n`;
  const configPath = join(dir, 'config.yaml');
  writeFileSync(
    configPath,
    [
      'data_dir: ./data',
      'queue:',
      `  backend: ${engine}`,
      '  name: chaos',
      `  lease_seconds: ${leaseSeconds}`,
      '  heartbeat_seconds: 0.5',
      queueYaml.trimEnd(),
      'store:',
      '  backend: redis',
      `  redis_url: ${backends.redisUrl}`,
      '  prefix: chaos',
      'agents:',
      '  default: script',
      '  script:',
      '    module: ./agent.mjs',
      '    timeout_seconds: 60',
      // The agent is the run's instrument: it writes the ledger outside its working copy and
      // finds its worker with ps, which a sandbox forbids. What chaos tests is the fleet's
      // delivery (queue, leases, fencing), not the sandbox (its own conformance suite does).
      'sandbox:',
      '  mode: none',
      'worker:',
      '  worker_id: ${CODEFLEET_WORKER_ID:-harness}',
      // Chaos spends attempts (every kill mid-job is one); the budget is not what is tested.
      '  max_retries: 30',
      '  backoff:',
      '    delay_seconds: 0.2',
      '    jitter: false',
      '  shutdown_grace_seconds: 5',
      'logging:',
      '  level: info',
      '',
    ].join('\n'),
  );
  return configPath;
}

/**
 * The harness's own view of the config (and of the host environment, which only the config
 * package reads): the workers' hermetic environment, the signed queue and the run store.
 */
export async function openHarness(
  dir: string,
  configPath: string,
  redisUrl: string,
  log: (line: string) => void,
): Promise<{ env: Record<string, string>; queue: Queue; store: RedisRunStore }> {
  const loaded = await loadConfig({ path: configPath, cwd: dir });
  const env: Record<string, string> = {
    PATH: loaded.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    ...gitTestEnv(),
    ...testFleetKeyEnv(),
    // Only the emulator sees these; any key works there.
    AWS_ACCESS_KEY_ID: 'emulator',
    AWS_SECRET_ACCESS_KEY: 'emulator',
    AWS_REGION: 'us-east-1',
  };
  const settings = queueSettingsFromConfig(loaded.config);
  // Signed with the fleet key the workers hold, as every producer's jobs are.
  const raw = await openQueue(
    settings.backend === 'sqs'
      ? { ...settings, credentials: { accessKeyId: 'emulator', secretAccessKey: 'emulator' } }
      : settings,
  );
  const queue = signedQueue(raw, settings.name, {
    keyring: { current: fleetKey(testFleetKey) },
    onUnsigned: (job) => log(`refused unsigned job ${job.jobId}: ${job.reason}`),
  });
  const store = new RedisRunStore({ url: redisUrl, prefix: 'chaos' });
  return { env, queue, store };
}
