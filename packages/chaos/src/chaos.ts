/**
 * `npm run chaos`: jobs through real `codefleet worker` processes (BullMQ on a real
 * redis-server with AOF, then SQS on the fauxqs emulator with a Redis for coordination),
 * against the local forge, while workers are SIGKILLed at random, Redis is SIGKILLed and
 * restarted (BullMQ run), and one worker is SIGSTOPped past its lease and continued. A
 * ledger outside the system (the harness for enqueues, the agent for claims, a git hook
 * in the origin for pushes) is compared with what the system holds at the end:
 *
 *   chaos bullmq: lost=0 unexpected=0 duplicate_prs=0 orphaned_worktrees=0 unfinished=0 (...)
 *
 * Exit 0 only when the first four counts are 0 for every engine. `unfinished` (jobs the
 * queue still holds when the run stops at its deadline) is reported, not failed: on a
 * loaded machine the fleet is slower, which is not a fault of the queue.
 * Usage: node dist/chaos.js [--jobs 100] [--workers 4] [--engine bullmq|sqs|both] [--keep]
 *        [--deadline <seconds>: when the run stops and what is left is unfinished; default jobs × 6, at least 180]
 */
import { appendFileSync, chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { startFauxqs } from 'fauxqs';
import { loadConfig } from '@codefleet/config';
import { createJob, fleetKey, type Job } from '@codefleet/core';
import { openQueue, queueSettingsFromConfig, signedQueue } from '@codefleet/queue';
import { RedisRunStore } from '@codefleet/store';
import { createTempRepo, git, gitTestEnv, startRedis, testFleetKey, testFleetKeyEnv } from '@codefleet/testkit';
import { audit, failures, readLedger, type Verdict } from './audit.js';
import { Fleet } from './fleet.js';

type Engine = 'bullmq' | 'sqs';
const leaseSeconds = 3;
const bin = fileURLToPath(new URL('../../../apps/cli/dist/bin/codefleet.js', import.meta.url));

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

async function runChaos(
  engine: Engine,
  jobCount: number,
  workerCount: number,
  deadlineMs: number,
  keep: boolean,
): Promise<Verdict> {
  const dir = mkdtempSync(join(tmpdir(), `codefleet-chaos-${engine}-`));
  const ledgerPath = join(dir, 'ledger.jsonl');
  const log = (line: string) => console.log(`[${engine}] ${line}`);
  const redis = await startRedis({ appendOnly: true });
  const sqs = engine === 'sqs' ? await startFauxqs({ port: 0, logger: false }) : undefined;
  const queueUrl = sqs?.createQueue('chaos').queueUrl;

  const seed = await createTempRepo({
    files: { 'README.md': '# chaos target\n', 'package.json': '{ "name": "chaos-target", "private": true }\n' },
  });
  const origin = join(dir, 'origin.git');
  await git(dir, ['clone', '--quiet', '--bare', seed.path, origin]);
  await seed.dispose();
  writeFileSync(join(origin, 'hooks', 'post-receive'), hookSource(ledgerPath));
  chmodSync(join(origin, 'hooks', 'post-receive'), 0o755);
  writeFileSync(join(dir, 'agent.mjs'), agentSource(ledgerPath));

  const queueYaml =
    engine === 'bullmq'
      ? `  bullmq:\n    url: ${redis.url}\n    prefix: chaos\n    lock_duration_ms: ${leaseSeconds * 1000}\n`
      : `  sqs:\n    queue_url: ${queueUrl}\n    endpoint: ${sqs?.address}\n    region: us-east-1\n    wait_time_seconds: 1\n    visibility_timeout: ${leaseSeconds}\n    coordination_url: ${redis.url}\n`;
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
      `  redis_url: ${redis.url}`,
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

  // The harness's own view of the config (and of the host environment, which only the
  // config package reads); the workers get a hermetic environment built from it.
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
  const store = new RedisRunStore({ url: redis.url, prefix: 'chaos' });

  const jobs: Job[] = [];
  for (let n = 0; n < jobCount; n += 1) {
    const id = `chaos-${n}-${Date.now().toString(36)}`;
    const job = createJob(
      {
        repo: origin,
        source: { kind: 'api' },
        title: `chaos job ${id}`,
        body: 'Write the file.',
        requested_by: 'chaos',
      },
      { id, now: new Date() },
    );
    jobs.push(job);
    await queue.enqueue(job);
    appendFileSync(ledgerPath, `${JSON.stringify({ ev: 'enqueue', job: job.id, at: Date.now() })}\n`);
  }
  log(`enqueued ${jobCount} jobs; starting ${workerCount} workers`);

  const fleet = new Fleet({ bin, config: configPath, env, dir });
  for (let i = 0; i < workerCount; i += 1) fleet.start();

  const done = async () => {
    let n = 0;
    for (const job of jobs) if ((await store.get(job.id))?.outcome === 'succeeded') n += 1;
    return n;
  };
  const started = Date.now();
  const deadline = started + deadlineMs;
  let kills = 0;
  let crashes = 0;
  let redisKilled = engine !== 'bullmq';
  let paused = false;
  let nextKill = Date.now() + 1_500;
  for (;;) {
    const finished = await done();
    if (finished === jobCount || Date.now() > deadline) break;
    // Faults follow progress, or time where the machine is too loaded for progress to get
    // there: a slow run meets every fault as well, and still has its last fifth to heal.
    const phase = Math.max(finished / jobCount, (Date.now() - started) / (deadline - started));
    // A worker that died by itself is restarted, as systemd or launchd would; it counts.
    for (const w of fleet.workers.filter((x) => !x.alive && !x.killed)) {
      w.killed = true;
      crashes += 1;
      log(`${w.name} exited on its own (see ${w.name}.log); restarting`);
      fleet.start();
    }
    // Chaos in the first 80% of the run; the rest heals and drains.
    if (phase < 0.8) {
      if (!redisKilled && phase >= 0.3) {
        redisKilled = true;
        log('SIGKILL redis-server, restart in 1 s (AOF on)');
        await redis.kill('SIGKILL');
        await sleep(1_000);
        await redis.restart();
      }
      if (!paused && phase >= 0.45) {
        const recent = readLedger(ledgerPath)
          .filter((e) => e.ev === 'claim' && Date.now() - e.at < 1_000)
          .map((e) => e.pid);
        const victim = fleet.live().find((w) => recent.includes(w.pid));
        if (victim) {
          paused = true;
          log(
            `SIGSTOP ${victim.name} mid-job for ${leaseSeconds * 3} s (its lease is ${leaseSeconds} s), then SIGCONT`,
          );
          victim.child.kill('SIGSTOP');
          setTimeout(() => victim.child.kill('SIGCONT'), leaseSeconds * 3_000);
        }
      }
      if (Date.now() >= nextKill) {
        const candidates = fleet.live();
        const victim = candidates[Math.floor(Math.random() * candidates.length)];
        if (victim) {
          kills += 1;
          victim.killed = true;
          victim.child.kill('SIGCONT');
          victim.child.kill('SIGKILL');
          await victim.exited;
          fleet.start();
        }
        nextKill = Date.now() + 1_000 + Math.floor(Math.random() * 2_000);
      }
    }
    await sleep(250);
  }
  log(
    `${Date.now() > deadline ? 'deadline' : 'done'}: ${await done()} of ${jobCount} succeeded; ${kills} workers SIGKILLed, ${crashes} exited on their own; draining`,
  );
  const forced = await fleet.stopAll(15_000);
  if (forced.length > 0) log(`did not drain within 15 s after SIGTERM, killed: ${forced.join(', ')}`);
  const unclean = fleet.workers.filter((w) => !forced.includes(w.name) && w.exit !== 0 && w.exit !== 'SIGKILL');
  if (unclean.length > 0) log(`exited uncleanly: ${unclean.map((w) => `${w.name} (${String(w.exit)})`).join(', ')}`);

  const verdict = await audit({
    ledger: readLedger(ledgerPath),
    jobs,
    queue,
    store,
    forgeDb: join(dir, 'data', 'forge.sqlite'),
    repo: origin,
    cacheDir: join(dir, 'data', 'cache'),
  });
  await queue.close();
  await store.close();
  await redis.stop();
  await sqs?.stop();
  const clean = failures(verdict) === 0;
  if (keep || !clean) log(`kept for inspection: ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
  return verdict;
}

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '100' },
    workers: { type: 'string', default: '4' },
    engine: { type: 'string', default: 'both' },
    keep: { type: 'boolean', default: false },
    deadline: { type: 'string' },
  },
});
const jobCount = Number(values.jobs);
const workerCount = Number(values.workers);
const deadlineSeconds = values.deadline === undefined ? Math.max(180, jobCount * 6) : Number(values.deadline);
if (
  !Number.isInteger(jobCount) ||
  jobCount < 1 ||
  !Number.isInteger(workerCount) ||
  workerCount < 1 ||
  !(deadlineSeconds > 0)
) {
  console.error(
    `--jobs and --workers take positive integers, --deadline a positive number of seconds; got ${values.jobs}, ${values.workers} and ${values.deadline}`,
  );
  process.exit(2);
}
const engines: Engine[] =
  values.engine === 'both'
    ? ['bullmq', 'sqs']
    : values.engine === 'bullmq' || values.engine === 'sqs'
      ? [values.engine]
      : [];
if (engines.length === 0) {
  console.error(`--engine takes bullmq, sqs or both, got ${values.engine}`);
  process.exit(2);
}
let allClean = true;
for (const engine of engines) {
  const v = await runChaos(engine, jobCount, workerCount, deadlineSeconds * 1000, values.keep ?? false);
  console.log(
    `chaos ${engine}: lost=${v.lost} unexpected=${v.unexpected} duplicate_prs=${v.duplicate_prs} orphaned_worktrees=${v.orphaned_worktrees} unfinished=${v.unfinished} (succeeded=${v.succeeded} claims=${v.claims} publishes=${v.publishes} fenced=${v.fenced})`,
  );
  if (failures(v) > 0) allClean = false;
}
process.exit(allClean ? 0 : 1);
