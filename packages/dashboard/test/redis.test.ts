import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { openQueue, type Queue } from '@codefleet/queue';
import { RedisRunStore } from '@codefleet/store';
import { startRedis, type RedisServer } from '@codefleet/testkit';
import { failedRun, implementingRun, jobOf, startDashboard, token } from './helpers.js';

// A fleet's backends: the run store and the queue (BullMQ) on a real redis-server. The
// overview, the runs list and a cancel work there as on SQLite.
let redis: RedisServer;
let store: RedisRunStore;
let queue: Queue;
let dash: Awaited<ReturnType<typeof startDashboard>>;
const bearer = { authorization: `Bearer ${token}` };

beforeAll(async () => {
  redis = await startRedis();
  store = new RedisRunStore({ url: redis.url, prefix: 'dash-test' });
  queue = await openQueue({
    backend: 'bullmq',
    url: redis.url,
    prefix: 'dash-test-q',
    name: 'jobs',
    leaseMs: 30_000,
    maxAttempts: 3,
  });
  dash = await startDashboard({ queue, store });
});
afterAll(async () => {
  await dash?.close();
  await queue?.close();
  await store?.close();
  await redis?.stop();
});

describe('the dashboard on Redis', () => {
  it('shows workers, queued jobs and runs, and records a cancel in the Redis store', async () => {
    const now = Date.now();
    const job = jobOf('fleet-1', { title: 'Fleet job' });
    await store.save(implementingRun(job));
    await queue.enqueue(jobOf('fleet-2'));
    await store.heartbeatWorker(
      {
        id: 'fleet-host:7:abc',
        host: 'fleet-host',
        pid: 7,
        version: '0.1.0',
        queue: 'jobs',
        backend: 'bullmq',
        concurrency: 4,
        startedAt: new Date(now - 60_000).toISOString(),
        lastHeartbeat: new Date(now).toISOString(),
        draining: false,
        jobs: [
          {
            jobId: job.id,
            runId: job.id,
            taskKey: job.idempotency_key,
            title: job.title,
            startedAt: new Date(now).toISOString(),
          },
        ],
      },
      60_000,
    );

    const overview = await (await fetch(`${dash.base}/`, { headers: bearer })).text();
    expect(overview).toContain('fleet-host:7:abc');
    expect(overview).toMatch(/data-count="queued">1</);
    expect(overview).toMatch(/data-stage="implementing"><a [^>]*>1</);
    const runs = await (await fetch(`${dash.base}/runs?state=active`, { headers: bearer })).text();
    expect(runs).toContain('Fleet job');

    const res = await fetch(`${dash.base}/runs/fleet-1/cancel`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'moved to another fleet' }),
    });
    expect(res.status).toBe(200);
    expect(await store.cancelRequested(job.idempotency_key)).toMatchObject({ by: 'dashboard' });
    expect(await store.journal({ runId: 'fleet-1' })).toEqual([
      expect.objectContaining({ action: 'cancel', via: 'dashboard' }),
    ]);
  });

  it('lists the other runs when one record cannot be read, and flags that one', async () => {
    await store.save(failedRun(jobOf('fine-1', { title: 'Readable job' })));
    await store.save(failedRun(jobOf('broken-1', { title: 'Broken job' })));
    expect(await redis.command('HSET', 'dash-test:runs:run:broken-1', 'record', 'garbage{')).toBe(':0');
    const runs = await fetch(`${dash.base}/runs`, { headers: bearer });
    expect(runs.status).toBe(200);
    const text = await runs.text();
    expect(text).toContain('Readable job');
    expect(text).toMatch(/broken-1[\s\S]*data-unreadable="true"/);
    expect(text).not.toContain('cannot be reached');
    const page = await fetch(`${dash.base}/runs/broken-1`, { headers: { ...bearer, accept: 'text/html' } });
    expect(page.status).toBe(500);
    const body = await page.text();
    expect(body).toContain('run broken-1: its stored record cannot be read');
    expect(body).not.toContain('cannot be reached');
    expect((await fetch(`${dash.base}/`, { headers: bearer })).status).toBe(200);
  });

  it('retries a run into one job, however often asked, even after that job ran (BullMQ)', async () => {
    const job = jobOf('retry-once', { title: 'Retry me once' });
    await store.save(failedRun(job));
    const retry = async () =>
      (await fetch(`${dash.base}/runs/retry-once/retry`, { method: 'POST', headers: bearer })).json() as Promise<{
        ok: boolean;
        runId: string;
        message: string;
      }>;
    const [a, b] = await Promise.all([retry(), retry()]);
    expect([a.ok, b.ok]).toEqual([true, true]);
    expect(b.runId).toBe(a.runId);
    // The retry's job runs to the end: the queue no longer knows its task, the run store still does.
    const claimed: string[] = [];
    for (
      let lease = await queue.claim({ workerId: 'w' });
      lease !== undefined;
      lease = await queue.claim({ workerId: 'w' })
    ) {
      claimed.push(lease.job.id);
      await lease.ack();
    }
    expect(claimed.filter((id) => id === a.runId)).toHaveLength(1);
    const again = await retry();
    expect(again).toMatchObject({ ok: true, runId: a.runId, message: expect.stringContaining('already retried') });
    expect((await queue.stats()).depth).toBe(0);
    expect(await store.journal({ runId: 'retry-once' })).toEqual([
      expect.objectContaining({ action: 'retry', jobId: a.runId }),
    ]);
  });
});
