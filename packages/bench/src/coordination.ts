/**
 * Figure 2: what coordination costs while jobs run. Real `codefleet worker` processes
 * (default queue timings: 120 s lease, a heartbeat every 30 s) run jobs whose agent sleeps,
 * against the local forge.
 * - BullMQ with the Redis run store: once every job's agent is running, Redis's counters
 *   are reset (CONFIG RESETSTAT) and read again after a window of whole heartbeats: commands
 *   per job-minute, and Redis's own execution time (commandstats usec) per wall second,
 *   scaled to 1,000 concurrent jobs. Redis also spends CPU reading requests and writing
 *   replies, which commandstats leaves out: the redis-server process's CPU time over the
 *   same window, less what it used idle before the fleet started, is printed beside it.
 * - SQS (fauxqs behind a counting proxy): requests per job for short jobs from enqueue to
 *   the end of the run, then requests per idle worker-hour over a window of long polls.
 */
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createJob, isTerminal, type Job } from '@codefleet/core';
import { latestRun, type RunStore } from '@codefleet/store';
import { createTempRepo, git } from '@codefleet/testkit';
import { openBenchQueue, processEnv, shellAgent, startBackend, writeConfig, type BackendServices } from './backends.js';
import { startCodefleet, type CodefleetProcess } from './codefleet-process.js';
import { cpuSeconds, parseCommandStats, redisBulk, type CommandStat } from './redis-info.js';

/** BullMQ + Redis run store, per running job. */
export interface RedisCost {
  jobs: number;
  workers: number;
  windowMs: number;
  commandsPerJobMinute: number;
  /** Share of one core Redis spends executing commands for 1,000 such jobs (commandstats usec). */
  coreShareFor1000: number;
  /** The same from the redis-server process's CPU time (execution plus network I/O), its idle CPU taken off. */
  processCoreShareFor1000: number;
  /** What the idle redis-server used of one core before the fleet started (its own timers). */
  idleCoreShare: number;
  top: CommandStat[];
}

/** SQS requests. */
export interface SqsCost {
  jobs: number;
  requestsPerJob: number;
  perJobByAction: Record<string, number>;
  idleWindowMs: number;
  requestsPerIdleWorkerHour: number;
  idleByAction: Record<string, number>;
}

/** Options shared by both measurements. */
export interface CostOptions {
  root: string;
  hostPath: string;
  say(line: string): void;
}

const workers = 4;
const concurrency = 4;
const idleBaselineMs = 30_000;

async function origin(dir: string): Promise<string> {
  const seed = await createTempRepo({
    files: { 'README.md': '# bench\n', 'src/index.js': 'export const answer = 42;\n' },
  });
  const path = join(dir, 'origin.git');
  try {
    await git(dir, ['clone', '--quiet', '--bare', seed.path, path]);
  } finally {
    await seed.dispose();
  }
  return path;
}

/** A fleet of `workers` worker processes on `services`, with jobs whose agent runs `script`. */
async function startFleet(services: BackendServices, options: CostOptions, name: string, script: string) {
  const dir = await mkdtemp(join(options.root, `${name}-`));
  const repo = await origin(dir);
  const config = writeConfig(dir, [
    ...services.yaml,
    ...shellAgent(script),
    'worker:',
    `  concurrency: ${concurrency}`,
    '  shutdown_grace_seconds: 1',
    'logging:',
    '  level: warn',
  ]);
  const env = processEnv(dir, options.hostPath);
  const queue = await openBenchQueue(config, dir);
  const store = services.openStore(dir);
  const processes: CodefleetProcess[] = [];
  return {
    dir,
    queue,
    store,
    async enqueue(count: number): Promise<Job[]> {
      const jobs = Array.from({ length: count }, (_, n) =>
        createJob(
          {
            repo,
            source: { kind: 'api' },
            title: `bench job ${n}`,
            body: 'Write bench-change.txt.',
            requested_by: 'bench',
          },
          { id: `${name}-${n}`, now: new Date() },
        ),
      );
      for (const job of jobs) await queue.enqueue(job);
      return jobs;
    },
    start() {
      for (let n = 0; n < workers; n += 1)
        processes.push(
          startCodefleet(['worker'], {
            config,
            env: { ...env, CODEFLEET_WORKER_ID: `w${n}` },
            dir,
            name: `worker-${n}`,
          }),
        );
    },
    async stop() {
      await Promise.all(processes.map((p) => p.stop()));
      await queue.close();
      await store.close();
    },
  };
}

/** Waits until every job's run has reached a stage `done` accepts. */
async function waitForRuns(
  store: RunStore,
  jobs: Job[],
  done: (stage: string) => boolean,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stages = await Promise.all(jobs.map(async (job) => (await latestRun(store, job.id)).run?.stage ?? 'queued'));
    if (stages.every(done)) return;
    if (Date.now() > deadline)
      throw new Error(`jobs did not get there within ${timeoutMs / 1000} s: ${stages.join(', ')}`);
    await sleep(500);
  }
}

/** N long-running jobs on BullMQ with the Redis run store; counts Redis's work over `windowMs`. */
export async function measureRedisCost(options: CostOptions & { windowMs: number }): Promise<RedisCost> {
  const services = await startBackend('bullmq');
  const redis = services.redis;
  if (redis?.pid === undefined) throw new Error('redis-server has no pid');
  // The agent outlives the window; the workers are stopped after it.
  const fleet = await startFleet(
    services,
    options,
    'redis-cost',
    `echo x > bench-change.txt; sleep ${Math.ceil(options.windowMs / 1000) + 180}`,
  );
  try {
    // An idle redis-server spends CPU on its own timers: measured first, and not charged to the jobs.
    const idleBefore = await cpuSeconds(redis.pid);
    const idleStarted = performance.now();
    await sleep(idleBaselineMs);
    const idleCpuPerMs = ((await cpuSeconds(redis.pid)) - idleBefore) / (performance.now() - idleStarted);
    const jobs = await fleet.enqueue(workers * concurrency);
    fleet.start();
    await waitForRuns(fleet.store, jobs, (stage) => stage === 'implementing', 300_000);
    options.say(
      `  redis: ${jobs.length} agents running on ${workers} workers; counting for ${options.windowMs / 1000} s`,
    );
    await redisBulk(redis.url, ['CONFIG', 'RESETSTAT']);
    const cpuBefore = await cpuSeconds(redis.pid);
    const started = performance.now();
    await sleep(options.windowMs);
    const info = await redisBulk(redis.url, ['INFO', 'commandstats']);
    const windowMs = performance.now() - started;
    const cpu = (await cpuSeconds(redis.pid)) - cpuBefore;
    // The bench's own CONFIG RESETSTAT and INFO are not the fleet's.
    const stats = parseCommandStats(info).filter((s) => !/^(info|config)\b/.test(s.command));
    const calls = stats.reduce((sum, s) => sum + s.calls, 0);
    const usec = stats.reduce((sum, s) => sum + s.usec, 0);
    const perJob = 1_000 / jobs.length;
    return {
      jobs: jobs.length,
      workers,
      windowMs,
      commandsPerJobMinute: calls / jobs.length / (windowMs / 60_000),
      coreShareFor1000: (usec / 1_000 / windowMs) * perJob,
      processCoreShareFor1000: Math.max(0, ((cpu - idleCpuPerMs * windowMs) * 1_000) / windowMs) * perJob,
      idleCoreShare: idleCpuPerMs * 1_000,
      top: stats.slice(0, 6),
    };
  } finally {
    await fleet.stop();
    await services.stop();
  }
}

/** Short jobs on SQS: requests per job; then the same workers idle for `idleMs`. */
export async function measureSqsCost(options: CostOptions & { jobs: number; idleMs: number }): Promise<SqsCost> {
  const services = await startBackend('sqs');
  const proxy = services.sqsProxy;
  if (!proxy) throw new Error('no SQS proxy');
  const fleet = await startFleet(services, options, 'sqs-cost', 'echo x > bench-change.txt');
  try {
    // The workers start first, so their free slots are already long-polling when the jobs
    // arrive: requests per job include those polls, as they would in a fleet.
    fleet.start();
    await sleep(3_000);
    proxy.reset();
    const jobs = await fleet.enqueue(options.jobs);
    await waitForRuns(fleet.store, jobs, (stage) => isTerminal(stage as Parameters<typeof isTerminal>[0]), 300_000);
    const perJobByAction = Object.fromEntries(
      Object.entries(proxy.counts()).map(([action, n]) => [action, n / jobs.length]),
    );
    const requestsPerJob = proxy.total() / jobs.length;
    options.say(`  sqs: ${jobs.length} jobs done; idle for ${options.idleMs / 1000} s`);
    proxy.reset();
    const started = performance.now();
    await sleep(options.idleMs);
    const idleWindowMs = performance.now() - started;
    const perHour = (n: number) => (n / workers) * (3_600_000 / idleWindowMs);
    return {
      jobs: jobs.length,
      requestsPerJob,
      perJobByAction,
      idleWindowMs,
      requestsPerIdleWorkerHour: perHour(proxy.total()),
      idleByAction: Object.fromEntries(Object.entries(proxy.counts()).map(([action, n]) => [action, perHour(n)])),
    };
  } finally {
    await fleet.stop();
    await services.stop();
  }
}
