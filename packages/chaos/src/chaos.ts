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
 *        [--deadline <seconds>: when the run stops and what is left is unfinished; default jobs × 6, at least 180;
 *         with no job through by then, the run goes on without faults until one is, for at most as long again]
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startFauxqs } from 'fauxqs';
import { createJob, type Job } from '@codefleet/core';
import type { Queue } from '@codefleet/queue';
import { startRedis } from '@codefleet/testkit';
import { createWorkspaceManager } from '@codefleet/workspace';
import { audit, failures, readLedger, type Verdict } from './audit.js';
import { injectFaults } from './faults.js';
import { Fleet } from './fleet.js';
import { openHarness, prepareTarget, writeConfig, type Engine } from './setup.js';

const bin = fileURLToPath(new URL('../../../apps/cli/dist/bin/codefleet.js', import.meta.url));

/** Enqueues `count` jobs on `origin`, each written into the ledger once the queue took it. */
async function enqueueJobs(queue: Queue, origin: string, count: number, ledgerPath: string): Promise<Job[]> {
  const jobs: Job[] = [];
  for (let n = 0; n < count; n += 1) {
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
  return jobs;
}

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

  const origin = await prepareTarget(dir, ledgerPath);
  const configPath = writeConfig(dir, engine, { redisUrl: redis.url, queueUrl, sqsAddress: sqs?.address });

  const { env, queue, store } = await openHarness(dir, configPath, redis.url, log);

  const jobs = await enqueueJobs(queue, origin, jobCount, ledgerPath);
  log(`enqueued ${jobCount} jobs; starting ${workerCount} workers`);

  const fleet = new Fleet({ bin, config: configPath, env, dir });
  for (let i = 0; i < workerCount; i += 1) fleet.start();

  const done = async () => {
    let n = 0;
    for (const job of jobs) if ((await store.get(job.id))?.outcome === 'succeeded') n += 1;
    return n;
  };
  const { kills, crashes, pastDeadline } = await injectFaults({
    engine,
    fleet,
    redis,
    ledgerPath,
    jobCount,
    deadlineMs,
    done,
    log,
  });
  log(
    `${pastDeadline ? 'deadline' : 'done'}: ${await done()} of ${jobCount} succeeded; ${kills} workers SIGKILLed, ${crashes} exited on their own; draining`,
  );
  const forced = await fleet.stopAll(15_000);
  if (forced.length > 0) {
    log(`did not drain within 15 s after SIGTERM, killed: ${forced.join(', ')}`);
    // What comes next on a real host: a supervisor starts the worker again, and its start-up
    // sweep frees the copies the killed one held (the same call, on the same cache). Audited
    // before it, the harness's own SIGKILL would count as the fleet's orphan.
    const workspaces = createWorkspaceManager({ cacheDir: join(dir, 'data', 'cache'), reuse: true, gitEnv: env });
    const swept = await workspaces.sweep(() => true);
    log(`start-up sweep: ${swept.removed.length} copies removed, ${swept.released.length} pool slots released`);
  }
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
  for (const why of v.lostWhy) console.log(`lost ${why}`);
  if (failures(v) > 0) allClean = false;
}
process.exit(allClean ? 0 : 1);
