import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createLogger, silentLogger } from '@codefleet/log';
import type { JobResult } from '@codefleet/pipeline';
import type { LocalQueue } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir, sampleJob, type TempDir, waitFor } from '@codefleet/testkit';
import { runWorker, type JobRunner, type PresenceOptions, type WorkerOptions } from '../src/index.js';
import { localQueue } from './local-queue.js';

// The worker's entry in a real run store (SQLite) and a real local queue; the job runner
// stands in for the pipeline and holds the job until the test has looked.
const fakeRun = { run_id: 'x' } as unknown as JobResult['run'];

describe('worker registry', () => {
  let dir: TempDir;
  let queue: LocalQueue;
  let store: SqliteRunStore;
  beforeEach(async () => {
    dir = await createTempDir('presence');
    // A lease no stall outlasts: one test holds its job with heartbeats (which renew the lease)
    // too rare to show, and once a 2 s lease ran out on a loaded machine the worker's other
    // slot took the job again; the test then finished that run, and the first ran on for good.
    queue = localQueue(dir.path, 3_600_000);
    store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
  });
  afterEach(async () => {
    await store.close();
    await queue.close();
    await dir.dispose();
  });
  const registry = (registryStore: PresenceOptions['store']): PresenceOptions => ({
    store: registryStore,
    ttlMs: 60_000,
    info: {
      id: 'host:1:abc',
      host: 'host',
      pid: 1,
      version: '0.1.0',
      queue: 'w',
      backend: 'local',
      concurrency: 2,
      startedAt: new Date().toISOString(),
    },
  });
  const options = (shutdown: AbortSignal, extra: Partial<WorkerOptions> = {}): WorkerOptions => ({
    workerId: 'host:1:abc',
    concurrency: 2,
    heartbeatMs: 100,
    shutdownGraceMs: 10_000,
    shutdown,
    log: silentLogger(),
    claimWaitMs: 50,
    ...extra,
  });

  it('registers at start, heartbeats its running jobs and draining, and removes itself on a clean stop', async () => {
    const job = sampleJob({ title: 'Fix the widget' });
    await queue.enqueue(job);
    const shutdown = new AbortController();
    let finish: () => void = () => undefined;
    const runner: JobRunner = async () => {
      await new Promise<void>((resolve) => {
        finish = resolve;
      });
      return { action: 'ack', run: fakeRun };
    };
    const worker = runWorker(queue, runner, options(shutdown.signal, { registry: registry(store) }));
    const [running] = await waitFor(async () => {
      const workers = await store.listWorkers();
      return workers[0]?.jobs.length === 1 ? workers : undefined;
    });
    expect(running).toMatchObject({ id: 'host:1:abc', backend: 'local', concurrency: 2, draining: false });
    expect(running?.jobs).toEqual([
      {
        jobId: job.id,
        runId: job.id,
        taskKey: job.idempotency_key,
        title: 'Fix the widget',
        startedAt: expect.any(String),
      },
    ]);
    // SIGTERM: the entry says draining while the job finishes.
    shutdown.abort();
    await waitFor(async () => (await store.listWorkers())[0]?.draining === true);
    finish();
    await worker;
    expect(await store.listWorkers()).toEqual([]);
  });

  it("writes a job's start and end at once, not at the next heartbeat", async () => {
    const job = sampleJob({ title: 'Fix the widget' });
    await queue.enqueue(job);
    const shutdown = new AbortController();
    let finish: () => void = () => undefined;
    let ended = false;
    const runner: JobRunner = async () => {
      await new Promise<void>((resolve) => {
        finish = resolve;
      });
      return { action: 'ack', run: fakeRun };
    };
    // A heartbeat interval far longer than the test: only the start and end writes can show.
    const worker = runWorker(
      queue,
      runner,
      options(shutdown.signal, { heartbeatMs: 600_000, registry: registry(store) }),
    );
    await waitFor(async () => (await store.listWorkers())[0]?.jobs.length === 1);
    finish();
    await waitFor(async () => {
      ended = (await store.listWorkers())[0]?.jobs.length === 0;
      return ended;
    });
    expect(ended).toBe(true);
    shutdown.abort();
    await worker;
  });

  it("shows a running job's stage, step and last output lines (masked) in its entry, and still tells the CLI", async () => {
    const job = sampleJob({ title: 'Fix the widget' });
    await queue.enqueue(job);
    const shutdown = new AbortController();
    const said: string[] = [];
    let step: (() => void) | undefined;
    let finish: () => void = () => undefined;
    const runner: JobRunner = async (ctx) => {
      ctx.onProgress?.({ stage: 'testing', pass: 'test', innerAttempt: 2 });
      await new Promise<void>((resolve) => (step = resolve));
      ctx.onOutput?.('test', '\x1b[32m✓ parses\x1b[0m\n');
      ctx.onOutput?.('test', '✗ token hunter2secret leaked\ndownloading 10%\rdownloading 80%');
      await new Promise<void>((resolve) => (finish = resolve));
      return { action: 'ack', run: fakeRun };
    };
    // Heartbeats far apart: what shows is written by the progress itself.
    const worker = runWorker(
      queue,
      runner,
      options(shutdown.signal, {
        heartbeatMs: 600_000,
        registry: { ...registry(store), mask: (t) => t.replaceAll('hunter2secret', '***'), progressWriteMs: 20 },
        onProgress: (p) => said.push(p.stage),
      }),
    );
    const entry = async () => (await store.listWorkers())[0]?.jobs[0]?.progress;
    // A stage change is written at once.
    expect(await waitFor(entry)).toEqual({ stage: 'testing', pass: 'test', innerAttempt: 2, lines: [] });
    expect(said).toEqual(['testing']);
    step?.();
    const shown = await waitFor(async () => ((await entry())?.lines.length === 3 ? entry() : undefined));
    expect(shown).toEqual({
      stage: 'testing',
      pass: 'test',
      innerAttempt: 2,
      step: 'test',
      stepStartedAt: expect.any(String),
      // Raw colours kept for the dashboard to render; the secret masked; a redrawn line as it ends.
      lines: ['\x1b[32m✓ parses\x1b[0m', '✗ token *** leaked', 'downloading 80%'],
    });
    finish();
    await waitFor(async () => (await store.listWorkers())[0]?.jobs.length === 0);
    shutdown.abort();
    await worker;
  });

  it('a registry that fails never stops the worker: the job runs, the failure is logged once', async () => {
    const jobs = [sampleJob(), sampleJob()];
    for (const job of jobs) await queue.enqueue(job);
    const lines: string[] = [];
    const log = createLogger({
      level: 'warn',
      destination: new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(chunk.toString('utf8'));
          done();
        },
      }),
    });
    // A run store whose file is gone from under it: every write throws.
    const broken = new SqliteRunStore(join(dir.path, 'broken.sqlite'));
    await broken.close();
    const shutdown = new AbortController();
    let ran = 0;
    const runner: JobRunner = async () => {
      ran += 1;
      // Long enough for a few heartbeats to fail while the job runs.
      await new Promise((resolve) => setTimeout(resolve, 400));
      if (ran === jobs.length) shutdown.abort();
      return { action: 'ack', run: fakeRun };
    };
    const summary = await runWorker(
      queue,
      runner,
      options(shutdown.signal, { concurrency: 1, log, registry: registry(broken) }),
    );
    expect(summary).toMatchObject({ processed: 2, acked: 2 });
    expect(lines.filter((l) => l.includes('registry.heartbeat_failed'))).toHaveLength(1);
    expect(lines.some((l) => l.includes('registry.remove_failed'))).toBe(true);
  });
});
