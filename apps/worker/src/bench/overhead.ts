/**
 * `npm run bench` (worker): what codefleet's worker loop costs per job on BullMQ.
 *
 * 1. A raw BullMQ Worker whose processor does nothing, concurrency 10.
 * 2. codefleet's `runWorker` on the BullMQ adapter, concurrency 10, with task leases and
 *    run records in the Redis store, and a no-op runner that records a run the way the
 *    pipeline does (a few saves) but runs no agent and no git.
 * Same Redis, same job count, in one run; prints both throughputs and the ratio
 * (target: codefleet's per-job time <= 1.1x raw). Then the resident memory of an idle
 * `codefleet worker` process (target <= 80 MB).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue as BullQueue, Worker as BullWorker } from 'bullmq';
import { advance, createJob, finish, newRun, startAttempt } from '@codefleet/core';
import { silentLogger } from '@codefleet/log';
import { openQueue } from '@codefleet/queue';
import { RedisRunStore } from '@codefleet/store';
import { createTempDir, startFixture, startRedis } from '@codefleet/testkit';
import { runWorker } from '../worker.js';

const jobs = 2_000;
const concurrency = 10;
const redis = await startRedis();
const line = (label: string, value: string) => console.log(`${label.padEnd(52)} ${value}`);

try {
  // 1. Raw BullMQ.
  const rawQueue = new BullQueue('raw', { connection: { url: redis.url }, prefix: 'bench' });
  await rawQueue.addBulk(Array.from({ length: jobs }, (_, i) => ({ name: 'job', data: { i } })));
  let done = 0;
  const rawStarted = performance.now();
  const rawWorker = new BullWorker('raw', async () => undefined, { connection: { url: redis.url, maxRetriesPerRequest: null }, prefix: 'bench', concurrency });
  await new Promise<void>((resolve) => rawWorker.on('completed', () => { done += 1; if (done === jobs) resolve(); }));
  const rawMs = performance.now() - rawStarted;
  await rawWorker.close();
  await rawQueue.close();

  // 2. codefleet's worker loop on the BullMQ adapter.
  const queue = await openQueue({ backend: 'bullmq', url: redis.url, prefix: 'bench', name: 'codefleet', leaseMs: 120_000, maxAttempts: 4, pollMs: 5 });
  const store = new RedisRunStore({ url: redis.url, prefix: 'bench' });
  for (let i = 0; i < jobs; i += 100) {
    await Promise.all(Array.from({ length: Math.min(100, jobs - i) }, (_, j) => queue.enqueue(
      createJob({ repo: 'acme/widgets', source: { kind: 'api' }, title: `bench ${i + j}`, body: '', requested_by: 'bench' }, { id: `bench-${i + j}`, now: new Date() }))));
  }
  const started = performance.now();
  const summary = await runWorker(queue, async (ctx) => {
    const now = new Date();
    let run = startAttempt(newRun(ctx.job, { runId: ctx.job.id, now }), { workerId: 'bench', now });
    await store.save(run);
    for (const stage of ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const) run = advance(run, stage, { now });
    await store.save(run);
    run = finish(run, 'succeeded', { now, dodResult: 'skipped' });
    await store.save(run);
    return { action: 'ack', run };
  }, {
    workerId: 'bench', concurrency, heartbeatMs: 30_000, shutdownGraceMs: 5_000, once: true,
    shutdown: new AbortController().signal, log: silentLogger(), leases: { store, ttlMs: 120_000 },
  });
  const ms = performance.now() - started;
  await queue.close();
  await store.close();
  if (summary.acked !== jobs) throw new Error(`codefleet worker acked ${summary.acked} of ${jobs}: ${JSON.stringify(summary)}`);

  const raw = jobs / (rawMs / 1_000);
  const ours = jobs / (ms / 1_000);
  const ratio = raw / ours;
  line(`raw BullMQ worker, no-op, concurrency ${concurrency}`, `${raw.toFixed(0)} jobs/s (${jobs} jobs in ${(rawMs / 1_000).toFixed(2)} s)`);
  line(`codefleet worker loop, no-op runner, concurrency ${concurrency}`, `${ours.toFixed(0)} jobs/s (${jobs} jobs in ${(ms / 1_000).toFixed(2)} s)`);
  line('per-job time codefleet / raw', `${ratio.toFixed(2)}x (target <= 1.1x: ${ratio <= 1.1 ? 'met' : 'NOT met'})`);

  // 3. Idle RSS of a real `codefleet worker` process on BullMQ.
  const dir = await createTempDir('bench-rss');
  try {
    const config = join(dir.path, 'config.yaml');
    writeFileSync(config, `data_dir: ./data\nqueue:\n  backend: bullmq\n  bullmq:\n    url: ${redis.url}\n    prefix: rss\nstore:\n  backend: redis\n  redis_url: ${redis.url}\nlogging:\n  level: warn\n`);
    const bin = fileURLToPath(new URL('../../../cli/dist/bin/codefleet.js', import.meta.url));
    const worker = startFixture(bin, ['--config', config, 'worker'], { cwd: dir.path, env: { PATH: process.env.PATH ?? '', HOME: dir.path } });
    await sleep(5_000);
    const status = readFileSync(`/proc/${worker.pid ?? 0}/status`, 'utf8');
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
    worker.kill('SIGTERM');
    await worker.exited;
    const mb = rssKb / 1024;
    line('idle `codefleet worker` RSS (bullmq, after 5 s)', `${mb.toFixed(1)} MB (target <= 80 MB: ${mb <= 80 ? 'met' : 'NOT met'})`);
  } finally {
    await dir.dispose();
  }
} finally {
  await redis.stop();
}
