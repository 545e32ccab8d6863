import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  addAgentRun,
  addVerification,
  advance,
  CodefleetError,
  createJob,
  finish,
  fleetKey,
  newRun,
  startAttempt,
  type RunRecord,
} from '@codefleet/core';
import { silentLogger } from '@codefleet/log';
import { LocalQueue, openQueue, signedQueue, type Queue } from '@codefleet/queue';
import {
  createTempDir,
  parsePrometheusText,
  type RedisServer,
  sampleJob,
  startRedis,
  type TempDir,
  testFleetKey,
  waitFor,
} from '@codefleet/testkit';
import { runWorker, startMonitorServer, WorkerMonitor, type JobRunner, type MonitorServer } from '../src/index.js';

// The endpoint is tested over real HTTP against a worker consuming a real queue.
const get = async (port: number, path: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text() };
};

/** A run record as the pipeline returns it: one attempt through every stage, 1 s each. */
function finishedRun(jobId: string) {
  const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
  const job = createJob(
    { repo: '/srv/r', source: { kind: 'cli' }, title: 'x', body: '', requested_by: 'me' },
    { id: jobId, now: t(0) },
  );
  let run = startAttempt(newRun(job, { runId: jobId, now: t(0) }), { workerId: 'w', now: t(0) });
  const stages = ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const;
  stages.forEach((stage, i) => {
    run = advance(run, stage, { now: t(i + 1) });
  });
  return finish(run, 'succeeded', { now: t(stages.length + 1), dodResult: 'passed' });
}

/**
 * A run record as the pipeline returns it from delivery `attempt`: an agent run of an
 * earlier delivery, then this one's two agent runs (the second a fix, with tokens) and
 * checks (install skipped, build passed, test failed twice), ending failed by the tests.
 */
function failedRun(jobId: string, attempt: number): RunRecord {
  const at = new Date(Date.UTC(2026, 0, 1));
  const job = createJob(
    { repo: '/srv/r', source: { kind: 'cli' }, title: 'x', body: '', requested_by: 'me' },
    { id: jobId, now: at },
  );
  let run = advance(startAttempt(newRun(job, { runId: jobId, now: at }), { workerId: 'w', now: at }), 'preparing', {
    now: at,
  });
  const agent = (n: number, inner: number, tokens?: { prompt: number; completion: number }) => ({
    pass: 'implement' as const,
    attempt: n,
    inner_attempt: inner,
    agent: 'claude',
    exit_code: 0,
    signal: null,
    timed_out: false,
    duration_ms: 50_000,
    output_tail: '',
    changed_files: ['a.ts'],
    outcome: 'changed' as const,
    ...(tokens ? { tokens, cost_usd: 0.25 } : {}),
  });
  const check = (step: 'install' | 'build' | 'test', passed: boolean, skipped = false) => ({
    pass: 'implement' as const,
    attempt,
    inner_attempt: 1,
    step,
    command: ['npm', step],
    exit_code: passed ? 0 : 1,
    signal: null,
    timed_out: false,
    duration_ms: 12_000,
    output_tail: '',
    passed,
    ...(skipped ? { skipped } : {}),
  });
  run = addAgentRun(run, agent(attempt - 1, 1), { now: at });
  run = addAgentRun(run, agent(attempt, 1), { now: at });
  run = addAgentRun(run, agent(attempt, 2, { prompt: 2_000, completion: 300 }), { now: at });
  for (const c of [check('install', true, true), check('build', true), check('test', false), check('test', false)])
    run = addVerification(run, c, { now: at });
  return finish(run, 'failed', { now: at, error: new CodefleetError('test_failed', 'tests fail') });
}

describe('health and metrics endpoint', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('serves /healthz and /metrics for a worker that ran a job', async () => {
    const dir: TempDir = await createTempDir('monitor');
    const queue = new LocalQueue({
      backend: 'local',
      path: join(dir.path, 'q.sqlite'),
      name: 'm',
      leaseMs: 5_000,
      maxAttempts: 3,
      pollMs: 20,
    });
    cleanups.push(async () => {
      await queue.close();
      await dir.dispose();
    });
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
    await runWorker(queue, runner, {
      workerId: 'w',
      concurrency: 1,
      heartbeatMs: 1_000,
      shutdownGraceMs: 1_000,
      shutdown: shutdown.signal,
      log: silentLogger(),
      claimWaitMs: 50,
      events: monitor,
    });

    expect(await get(server.port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
    const metrics = (await get(server.port, '/metrics')).body;
    expect(metrics).toMatch(/^codefleet_jobs_total\{settlement="acked",outcome="succeeded"\} 1$/m);
    expect(metrics).toMatch(/^codefleet_jobs_in_flight 0$/m);
    expect(metrics).toMatch(/^codefleet_queue_depth 0$/m);
    expect(metrics).toMatch(/^codefleet_job_attempt_count 1$/m);
    // Every stage of the attempt observed once, 1 s each (le="1" bucket holds it).
    for (const stage of ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing']) {
      expect(metrics).toMatch(
        new RegExp(`^codefleet_stage_duration_seconds_bucket\\{le="1",stage="${stage}"\\} 1$`, 'm'),
      );
    }
    expect((await get(server.port, '/nope')).status).toBe(404);
  });

  it('exports what an operator needs: outcomes by error code, step, agent and wait times, tokens, retries, queue age, workers, process', async () => {
    const dir: TempDir = await createTempDir('monitor');
    const queue = new LocalQueue({
      backend: 'local',
      path: join(dir.path, 'q.sqlite'),
      name: 'm',
      leaseMs: 5_000,
      maxAttempts: 3,
      pollMs: 20,
    });
    cleanups.push(async () => {
      await queue.close();
      await dir.dispose();
    });
    // The scrape happens "an hour later" for the age; the health clock moves the same way.
    const hourLater = () => Date.now() + 3_600_000;
    const monitor = await WorkerMonitor.create(
      { queue, staleAfterMs: 30_000, liveWorkers: async () => 3, spentToday: async () => 1.25, now: hourLater },
      1,
    );
    const server = await startMonitorServer(monitor, { port: 0 });
    cleanups.push(() => server.close());

    // One job waits in the queue while the scrape runs: the oldest age is its wait so far.
    const waiting = createJob(
      { repo: '/srv/r', source: { kind: 'cli' }, title: 'waits', body: '', requested_by: 'me' },
      { id: 'waits', now: new Date() },
    );
    await queue.enqueue(waiting);
    const before = parsePrometheusText((await get(server.port, '/metrics')).body);
    expect(before.value('codefleet_queue_depth')).toBe(1);
    expect(before.value('codefleet_workers_live')).toBe(3);
    expect(before.value('codefleet_spend_today_usd')).toBe(1.25);
    expect(before.value('codefleet_queue_oldest_age_seconds')).toBeGreaterThanOrEqual(3_600);
    expect(before.types.get('codefleet_process_cpu_user_seconds_total')).toBe('counter');
    expect(before.types.get('codefleet_nodejs_heap_size_used_bytes')).toBe('gauge');

    // The job's first delivery is retried; its second fails the tests for good.
    const shutdown = new AbortController();
    const runner: JobRunner = async (ctx) => {
      if (ctx.attempt === 1) {
        const run = startAttempt(newRun(ctx.job, { runId: ctx.job.id, now: new Date() }), {
          workerId: 'w',
          now: new Date(),
        });
        return { action: 'retry', delayMs: 0, reason: 'flaky network', run };
      }
      shutdown.abort();
      return { action: 'dead_letter', reason: 'tests fail', run: failedRun(ctx.job.id, ctx.attempt) };
    };
    await runWorker(queue, runner, {
      workerId: 'w',
      concurrency: 1,
      heartbeatMs: 1_000,
      shutdownGraceMs: 1_000,
      shutdown: shutdown.signal,
      log: silentLogger(),
      claimWaitMs: 50,
      events: monitor,
    });

    const after = parsePrometheusText((await get(server.port, '/metrics')).body);
    expect(after.value('codefleet_jobs_total', { settlement: 'retried', outcome: 'none' })).toBe(1);
    expect(after.value('codefleet_jobs_total', { settlement: 'dead_lettered', outcome: 'failed' })).toBe(1);
    expect(
      after.value('codefleet_runs_finished_total', { outcome: 'failed', error_code: 'test_failed', source: 'cli' }),
    ).toBe(1);
    expect(after.value('codefleet_retries_total', { kind: 'delivery' })).toBe(1);
    expect(after.value('codefleet_retries_total', { kind: 'fix' })).toBe(1);
    expect(after.value('codefleet_queue_dead_letters')).toBe(1);
    expect(after.value('codefleet_queue_oldest_age_seconds')).toBe(0); // nothing waits
    // The first delivery's wait is observed, the redelivery's is not (it waited on purpose).
    expect(after.value('codefleet_queue_wait_seconds_count')).toBe(1);
    // Only this delivery's entries: the attempt-1 agent run in the record is not counted again.
    expect(after.value('codefleet_agent_run_duration_seconds_count', { agent: 'claude', outcome: 'changed' })).toBe(2);
    expect(after.value('codefleet_agent_run_duration_seconds_sum', { agent: 'claude', outcome: 'changed' })).toBe(100);
    expect(after.value('codefleet_agent_tokens_total', { agent: 'claude', kind: 'prompt' })).toBe(2_000);
    expect(after.value('codefleet_agent_tokens_total', { agent: 'claude', kind: 'completion' })).toBe(300);
    expect(after.value('codefleet_agent_cost_usd_total', { agent: 'claude' })).toBe(0.25);
    expect(after.value('codefleet_verification_step_duration_seconds_count', { step: 'test', result: 'failed' })).toBe(
      2,
    );
    expect(after.value('codefleet_verification_step_duration_seconds_sum', { step: 'build', result: 'passed' })).toBe(
      12,
    );
    expect(
      after.value('codefleet_verification_step_duration_seconds_count', { step: 'install', result: 'passed' }),
    ).toBeUndefined(); // skipped
    // No sample carries an unbounded label (why is missing, unknown_key or bad_signature;
    // what is one of the retention's trimmed kinds).
    for (const sample of after.samples) {
      for (const label of Object.keys(sample.labels))
        expect([
          'settlement',
          'outcome',
          'error_code',
          'source',
          'stage',
          'step',
          'result',
          'agent',
          'kind',
          'why',
          'what',
          'le',
          'quantile',
          'type',
          'space',
          'version',
          'major',
          'minor',
          'patch',
        ]).toContain(label);
    }
  });

  it('counts jobs refused as unsigned, by why, for an operator to alert on; the worker goes on with the next job', async () => {
    const dir: TempDir = await createTempDir('monitor');
    const inner = new LocalQueue({
      backend: 'local',
      path: join(dir.path, 'q.sqlite'),
      name: 'm',
      leaseMs: 5_000,
      maxAttempts: 3,
      pollMs: 20,
    });
    cleanups.push(async () => {
      await inner.close();
      await dir.dispose();
    });
    const monitor = await WorkerMonitor.create({ queue: inner, staleAfterMs: 30_000 }, 1);
    const queue = signedQueue(inner, 'm', {
      keyring: { current: fleetKey(testFleetKey) },
      onUnsigned: (job) => monitor.jobUnsigned(job.why),
    });
    const server = await startMonitorServer(monitor, { port: 0 });
    cleanups.push(() => server.close());
    const before = parsePrometheusText((await get(server.port, '/metrics')).body);
    expect(before.value('codefleet_jobs_unsigned_total', { why: 'missing' })).toBe(0);

    await inner.injectRaw(JSON.stringify(sampleJob()));
    const good = sampleJob();
    await queue.enqueue(good);
    const ran: string[] = [];
    const shutdown = new AbortController();
    const runner: JobRunner = async (ctx) => {
      ran.push(ctx.job.id);
      shutdown.abort();
      return { action: 'ack', run: finishedRun(ctx.job.id) };
    };
    await runWorker(queue, runner, {
      workerId: 'w',
      concurrency: 1,
      heartbeatMs: 1_000,
      shutdownGraceMs: 1_000,
      shutdown: shutdown.signal,
      log: silentLogger(),
      claimWaitMs: 50,
      events: monitor,
    });

    expect(ran).toEqual([good.id]);
    const after = parsePrometheusText((await get(server.port, '/metrics')).body);
    expect(after.value('codefleet_jobs_unsigned_total', { why: 'missing' })).toBe(1);
    expect(after.value('codefleet_jobs_unsigned_total', { why: 'bad_signature' })).toBe(0);
    expect(after.value('codefleet_queue_dead_letters')).toBe(1);
  });

  it('/healthz fails while the queue connection stops taking claims, and recovers', async () => {
    const redis: RedisServer = await startRedis();
    cleanups.push(() => redis.stop());
    const queue: Queue = await openQueue({
      backend: 'bullmq',
      url: redis.url,
      prefix: 'mon',
      name: 'health',
      leaseMs: 5_000,
      maxAttempts: 3,
      pollMs: 50,
    });
    cleanups.push(() => queue.close());
    const monitor = await WorkerMonitor.create({ queue, staleAfterMs: 1_500 }, 1);
    const server: MonitorServer = await startMonitorServer(monitor, { port: 0 });
    cleanups.push(() => server.close());
    const shutdown = new AbortController();
    const worker = runWorker(queue, async () => ({ action: 'ack', run: finishedRun('x') }), {
      workerId: 'w',
      concurrency: 1,
      heartbeatMs: 1_000,
      shutdownGraceMs: 500,
      shutdown: shutdown.signal,
      log: silentLogger(),
      claimWaitMs: 200,
      events: monitor,
    });
    cleanups.push(async () => {
      shutdown.abort();
      await worker;
    });

    await waitFor(async () => (await get(server.port, '/healthz')).status === 200 || undefined, {
      what: 'healthy',
    });
    await redis.kill('SIGKILL');
    const down = await waitFor(
      async () => {
        const res = await get(server.port, '/healthz');
        return res.status === 503 ? res : undefined;
      },
      { what: '503 while Redis is down' },
    );
    expect(down.body).toMatch(/^unhealthy: /);
    await redis.restart();
    await waitFor(async () => (await get(server.port, '/healthz')).status === 200 || undefined, {
      what: 'healthy again',
    });
  });
});
