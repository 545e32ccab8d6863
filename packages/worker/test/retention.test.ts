import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createJob, finish, newRun } from '@codefleet/core';
import { createLogger } from '@codefleet/log';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir, parsePrometheusText, sampleJob, waitFor } from '@codefleet/testkit';
import { retentionChore, startHousekeeping, startMonitorServer, WorkerMonitor } from '../src/index.js';
import { localQueue } from './local-queue.js';

// Retention against the real SQLite store and queue, counted on a real /metrics endpoint.
const dayMs = 86_400_000;

function run(n: number, createdAt: number, finished: boolean) {
  const now = new Date(createdAt);
  const job = createJob(
    { repo: '/srv/r', source: { kind: 'cli' }, title: `t${n}`, body: '', requested_by: 'me' },
    { id: `job-${n}`, now },
  );
  const queued = newRun(job, { runId: job.id, now });
  return finished ? finish(queued, 'cancelled', { now }) : queued;
}

describe('housekeeping', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  /** A real SQLite store and local queue in a temp dir, closed after the test. */
  const open = async () => {
    const dir = await createTempDir('retention');
    const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
    const queue = localQueue(dir.path);
    cleanups.push(async () => {
      await queue.close();
      await store.close();
      await dir.dispose();
    });
    return { store, queue };
  };

  it('trims the store and the queue in the background, logs and counts it; a failing chore does not stop the others', async () => {
    const { store, queue } = await open();
    const real = Date.now();
    // The chore's clock is 91 days ahead: what happened before `real - 1 day` is past 90 days.
    const now = () => real + 91 * dayMs;
    await store.save(run(1, real - 10 * dayMs, true));
    await store.save(run(2, real - 10 * dayMs, true));
    await store.save(run(3, real - 10 * dayMs, false));
    await store.save(run(4, real + 60 * dayMs, true));
    await queue.enqueue(sampleJob());
    await (await queue.claim({ workerId: 'w' }))!.ack();

    const monitor = await WorkerMonitor.create({ queue, staleAfterMs: 60_000 }, 1);
    const server = await startMonitorServer(monitor, { port: 0 });
    cleanups.push(() => server.close());
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({ destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
    const housekeeping = startHousekeeping({
      chores: [
        async () => {
          throw new Error('the cache directory is gone');
        },
        retentionChore(store, queue, { maxAgeDays: 90 }, now),
      ],
      intervalMs: 3_600_000,
      firstAfterMs: 0,
      log,
      onTrimmed: (trimmed) => monitor.trimmed(trimmed),
    });
    cleanups.push(() => housekeeping.stop());

    const trimmed = await waitFor(() => lines.find((line) => line.event === 'retention.trimmed'));
    expect(trimmed).toMatchObject({ runs: 2, journal: 0, request_keys: 0, queue_completed: 1, dead_letters: 0 });
    expect(lines.find((line) => line.event === 'retention.failed')).toMatchObject({
      level: 'warn',
      err: expect.objectContaining({ message: 'the cache directory is gone' }),
    });
    expect((await store.list()).map((r) => r.runId)).toEqual(['job-4', 'job-3']);
    expect(await queue.stats()).toMatchObject({ completed: 0 });

    const metrics = parsePrometheusText(await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text());
    const count = (what: string) => metrics.value('codefleet_retention_trimmed_total', { what });
    expect([count('runs'), count('queue_completed'), count('mirrors')]).toEqual([2, 1, 0]);
    // A pass with nothing to do says nothing.
    expect(await housekeeping.runNow()).toEqual({
      runs: 0,
      journal: 0,
      request_keys: 0,
      fence_rejections: 0,
      queue_completed: 0,
      dead_letters: 0,
    });
    expect(lines.filter((line) => line.event === 'retention.trimmed')).toHaveLength(1);
  });

  it('max_runs alone also bounds the completed queue jobs, and leaves a dead letter', async () => {
    const { store, queue } = await open();
    for (let i = 0; i < 4; i += 1) {
      await queue.enqueue(sampleJob({ title: `job ${i}` }));
      const lease = (await queue.claim({ workerId: 'w' }))!;
      await (i === 0 ? lease.deadLetter('given up') : lease.ack());
    }
    const chore = retentionChore(store, queue, { maxAgeDays: 0, maxRuns: 1 });
    expect(await chore()).toMatchObject({ queue_completed: 2, dead_letters: 0 });
    expect(await queue.stats()).toMatchObject({ completed: 1, deadLetter: 1 });
  });
});
