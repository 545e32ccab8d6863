import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { advance, createJob, finish, newRun, startAttempt } from '@codefleet/core';
import { silentLogger } from '@codefleet/log';
import { LocalQueue, openQueue, type Queue } from '@codefleet/queue';
import { sampleJob } from '@codefleet/queue/conformance';
import { createTempDir, startRedis, waitFor, type RedisServer, type TempDir } from '@codefleet/testkit';
import { runWorker, startMonitorServer, WorkerMonitor, type JobRunner, type MonitorServer } from '../src/index.js';

// The endpoint is tested over real HTTP against a worker consuming a real queue.
const get = async (port: number, path: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text() };
};

/** A run record as the pipeline returns it: one attempt through every stage, 1 s each. */
function finishedRun(jobId: string) {
  const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
  const job = createJob({ repo: '/srv/r', source: { kind: 'cli' }, title: 'x', body: '', requested_by: 'me' }, { id: jobId, now: t(0) });
  let run = startAttempt(newRun(job, { runId: jobId, now: t(0) }), { workerId: 'w', now: t(0) });
  const stages = ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const;
  stages.forEach((stage, i) => { run = advance(run, stage, { now: t(i + 1) }); });
  return finish(run, 'succeeded', { now: t(stages.length + 1), dodResult: 'passed' });
}

describe('health and metrics endpoint', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('serves /healthz and /metrics for a worker that ran a job', async () => {
    const dir: TempDir = await createTempDir('monitor');
    const queue = new LocalQueue({ backend: 'local', path: join(dir.path, 'q.sqlite'), name: 'm', leaseMs: 5_000, maxAttempts: 3, pollMs: 20 });
    cleanups.push(async () => { await queue.close(); await dir.dispose(); });
    const monitor = await WorkerMonitor.create({ queue, staleAfterMs: 30_000 }, 1);
    const server = await startMonitorServer(monitor, { port: 0 });
    cleanups.push(() => server.close());

    const job = sampleJob();
    await queue.enqueue(job);
    const shutdown = new AbortController();
    const runner: JobRunner = async (ctx) => {
      const inside = await get(server.port, '/metrics');
      expect(inside.body).toMatch(/^codefleet_jobs_in_flight 1$/m);
      shutdown.abort();
      return { action: 'ack', run: finishedRun(ctx.job.id) };
    };
    await runWorker(queue, runner, { workerId: 'w', concurrency: 1, heartbeatMs: 1_000, shutdownGraceMs: 1_000, shutdown: shutdown.signal, log: silentLogger(), claimWaitMs: 50, events: monitor });

    expect(await get(server.port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
    const metrics = (await get(server.port, '/metrics')).body;
    expect(metrics).toMatch(/^codefleet_jobs_total\{settlement="acked",outcome="succeeded"\} 1$/m);
    expect(metrics).toMatch(/^codefleet_jobs_in_flight 0$/m);
    expect(metrics).toMatch(/^codefleet_queue_depth 0$/m);
    expect(metrics).toMatch(/^codefleet_job_attempt_count 1$/m);
    // Every stage of the attempt observed once, 1 s each (le="1" bucket holds it).
    for (const stage of ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing']) {
      expect(metrics).toMatch(new RegExp(`^codefleet_stage_duration_seconds_bucket\\{le="1",stage="${stage}"\\} 1$`, 'm'));
    }
    expect((await get(server.port, '/nope')).status).toBe(404);
  });

  it('/healthz fails while the queue connection stops taking claims, and recovers', async () => {
    const redis: RedisServer = await startRedis();
    cleanups.push(() => redis.stop());
    const queue: Queue = await openQueue({ backend: 'bullmq', url: redis.url, prefix: 'mon', name: 'health', leaseMs: 5_000, maxAttempts: 3, pollMs: 50 });
    cleanups.push(() => queue.close());
    const monitor = await WorkerMonitor.create({ queue, staleAfterMs: 1_500 }, 1);
    const server: MonitorServer = await startMonitorServer(monitor, { port: 0 });
    cleanups.push(() => server.close());
    const shutdown = new AbortController();
    const worker = runWorker(queue, async () => ({ action: 'ack', run: finishedRun('x') }), {
      workerId: 'w', concurrency: 1, heartbeatMs: 1_000, shutdownGraceMs: 500, shutdown: shutdown.signal, log: silentLogger(), claimWaitMs: 200, events: monitor,
    });
    cleanups.push(async () => { shutdown.abort(); await worker; });

    await waitFor(async () => (await get(server.port, '/healthz')).status === 200 || undefined, { timeoutMs: 10_000, what: 'healthy' });
    await redis.kill('SIGKILL');
    const down = await waitFor(async () => {
      const res = await get(server.port, '/healthz');
      return res.status === 503 ? res : undefined;
    }, { timeoutMs: 15_000, what: '503 while Redis is down' });
    expect(down.body).toMatch(/^unhealthy: /);
    await redis.restart();
    await waitFor(async () => (await get(server.port, '/healthz')).status === 200 || undefined, { timeoutMs: 20_000, what: 'healthy again' });
  }, 60_000);
});
