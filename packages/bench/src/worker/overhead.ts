/**
 * `npm run bench` (worker): what codefleet's worker loop costs per job on BullMQ.
 *
 * 1. A raw BullMQ Worker whose processor does nothing, concurrency 10: one Redis round
 *    trip per job (the completion script also fetches the next job).
 * 2. codefleet's `runWorker` on the BullMQ adapter, concurrency 10, with task leases and
 *    run records in the Redis store, and a no-op runner that records a run the way the
 *    pipeline does (three saves: attempt started, stages, finished; the real pipeline
 *    saves more often) but runs no agent and no git. Five round trips per job: ack with
 *    fetch-next, task-lease hand-over, three saves.
 * Same Redis, same job count, in one run. Each side first runs a short unmeasured round,
 * so neither is timed while the JIT is still cold. Prints both throughputs and the ratio,
 * as information with no target: a durable run record and a lease fence cost more than
 * the one round trip a raw no-op job needs, and a real job runs for minutes (what users
 * feel is in @codefleet/bench: trigger to agent start, coordination cost per running job).
 * Then where codefleet's time goes: the loop alone (no task leases, no saves), with task
 * leases, and with the saves.
 * Then the resident memory of an idle `codefleet worker` process (target <= 80 MB), as
 * started by plain `node` and with `--max-semi-space-size=1` (young generation capped at
 * 1 MB per semi-space), as the launchers in infra/ start it: watched for 20 s, the value it
 * settles at once start-up is over, and the start-up peak.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue as BullQueue, Worker as BullWorker } from 'bullmq';
import { advance, createJob, finish, newRun, startAttempt } from '@codefleet/core';
import { silentLogger } from '@codefleet/log';
import { openQueue } from '@codefleet/queue';
import { RedisRunStore } from '@codefleet/store';
import { createTempDir, startFixture, startRedis, type RedisServer } from '@codefleet/testkit';
import { runWorker } from '@codefleet/worker';
import { codefleetBin } from '../codefleet-process.js';

const jobs = 3_000;
const warmupJobs = 500;
const concurrency = 10;
const redis = await startRedis();
const line = (label: string, value: string) => console.log(`${label.padEnd(60)} ${value}`);
let round = 0;

/** Raw BullMQ: `count` no-op jobs through a BullMQ Worker; resolves the elapsed ms. */
async function rawRound(count: number): Promise<number> {
  const name = `raw${(round += 1)}`;
  const queue = new BullQueue(name, { connection: { url: redis.url }, prefix: 'bench' });
  await queue.addBulk(Array.from({ length: count }, (_, i) => ({ name: 'job', data: { i } })));
  let done = 0;
  const started = performance.now();
  const worker = new BullWorker(name, async () => undefined, {
    connection: { url: redis.url, maxRetriesPerRequest: null },
    prefix: 'bench',
    concurrency,
  });
  await new Promise<void>((resolve) =>
    worker.on('completed', () => {
      done += 1;
      if (done === count) resolve();
    }),
  );
  const ms = performance.now() - started;
  await worker.close();
  await queue.close();
  return ms;
}

/** codefleet's loop: `count` jobs through runWorker; resolves the elapsed ms. */
async function codefleetRound(count: number, parts: { leases: boolean; saves: boolean }): Promise<number> {
  const name = `codefleet${(round += 1)}`;
  const queue = await openQueue({
    backend: 'bullmq',
    url: redis.url,
    prefix: 'bench',
    name,
    leaseMs: 120_000,
    maxAttempts: 4,
    pollMs: 5,
  });
  const store = new RedisRunStore({ url: redis.url, prefix: 'bench' });
  for (let i = 0; i < count; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, count - i) }, (_, j) =>
        queue.enqueue(
          createJob(
            { repo: 'acme/widgets', source: { kind: 'api' }, title: `bench ${i + j}`, body: '', requested_by: 'bench' },
            { id: `${name}-${i + j}`, now: new Date() },
          ),
        ),
      ),
    );
  }
  const save = parts.saves ? (run: Parameters<typeof store.save>[0]) => store.save(run) : async () => undefined;
  const started = performance.now();
  const summary = await runWorker(
    queue,
    async (ctx) => {
      const now = new Date();
      let run = startAttempt(newRun(ctx.job, { runId: ctx.job.id, now }), { workerId: 'bench', now });
      await save(run);
      for (const stage of ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const)
        run = advance(run, stage, { now });
      await save(run);
      run = finish(run, 'succeeded', { now, dodResult: 'skipped' });
      await save(run);
      return { action: 'ack', run };
    },
    {
      workerId: 'bench',
      concurrency,
      heartbeatMs: 30_000,
      shutdownGraceMs: 5_000,
      once: true,
      shutdown: new AbortController().signal,
      log: silentLogger(),
      ...(parts.leases ? { leases: { store, ttlMs: 120_000 } } : {}),
    },
  );
  const ms = performance.now() - started;
  await queue.close();
  await store.close();
  if (summary.acked !== count)
    throw new Error(`codefleet worker acked ${summary.acked} of ${count}: ${JSON.stringify(summary)}`);
  return ms;
}

/** How long the idle worker is watched, and the last stretch of it that counts as settled. */
const watchMs = 20_000;
const settledMs = 5_000;

/**
 * Resident memory of a real idle `codefleet worker` on BullMQ, sampled every 500 ms for
 * 20 s: the peak (start-up, before V8's memory reducer has run: it shrinks the heap after
 * some seconds of little allocation) and the settled value, the median of the last 5 s.
 */
async function idleWorkerRss(server: RedisServer, nodeArgs: string[]): Promise<{ peakMb: number; settledMb: number }> {
  const dir = await createTempDir('bench-rss');
  try {
    const config = join(dir.path, 'config.yaml');
    writeFileSync(
      config,
      `data_dir: ./data\nqueue:\n  backend: bullmq\n  bullmq:\n    url: ${server.url}\n    prefix: rss\nstore:\n  backend: redis\n  redis_url: ${server.url}\nlogging:\n  level: warn\n`,
    );
    const worker = startFixture(codefleetBin, ['--config', config, 'worker'], {
      cwd: dir.path,
      env: { PATH: process.env.PATH ?? '', HOME: dir.path },
      nodeArgs,
    });
    const samples: { at: number; mb: number }[] = [];
    const started = performance.now();
    while (performance.now() - started < watchMs) {
      await sleep(500);
      const status = readFileSync(`/proc/${worker.pid ?? 0}/status`, 'utf8');
      samples.push({
        at: performance.now() - started,
        mb: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024,
      });
    }
    worker.kill('SIGTERM');
    await worker.exited;
    const settled = samples
      .filter((s) => s.at >= watchMs - settledMs)
      .map((s) => s.mb)
      .sort((a, b) => a - b);
    return {
      peakMb: Math.max(...samples.map((s) => s.mb)),
      settledMb: settled[Math.floor(settled.length / 2)] ?? Number.NaN,
    };
  } finally {
    await dir.dispose();
  }
}

try {
  await rawRound(warmupJobs);
  const rawMs = await rawRound(jobs);
  await codefleetRound(warmupJobs, { leases: true, saves: true });
  const fullMs = await codefleetRound(jobs, { leases: true, saves: true });
  const leasesMs = await codefleetRound(jobs, { leases: true, saves: false });
  const loopMs = await codefleetRound(jobs, { leases: false, saves: false });

  const perSecond = (ms: number) =>
    `${(jobs / (ms / 1_000)).toFixed(0)} jobs/s (${jobs} jobs in ${(ms / 1_000).toFixed(2)} s)`;
  const perJob = (ms: number) => `${((ms * 1_000) / jobs).toFixed(0)} µs/job`;
  const ratio = fullMs / rawMs;
  line(`raw BullMQ worker, no-op, concurrency ${concurrency}`, perSecond(rawMs));
  line(`codefleet worker loop, no-op runner, concurrency ${concurrency}`, perSecond(fullMs));
  line('per-job time codefleet / raw (information, no target)', `${ratio.toFixed(2)}x`);
  line('  where it goes: raw BullMQ', perJob(rawMs));
  line('  codefleet loop alone (no task leases, no run saves)', perJob(loopMs));
  line('  + task leases (hand-over)', `+${perJob(leasesMs - loopMs)}`);
  line('  + 3 run-record saves', `+${perJob(fullMs - leasesMs)}`);

  for (const flags of [[], ['--max-semi-space-size=1']]) {
    const { peakMb, settledMb } = await idleWorkerRss(redis, flags);
    line(
      `idle \`codefleet worker\` RSS (bullmq${flags.length ? `, ${flags.join(' ')} as infra/ starts it` : ', plain node'})`,
      `${settledMb.toFixed(1)} MB settled, ${peakMb.toFixed(1)} MB peak at start-up (target <= 80 MB: ${settledMb <= 80 ? 'met' : 'NOT met'})`,
    );
  }
} finally {
  await redis.stop();
}
