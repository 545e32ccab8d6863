import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { readOverview } from '../src/index.js';
import { implementingRun, jobOf, openBackends, startDashboard, token, type Backends } from './helpers.js';

let b: Backends;
beforeEach(async () => {
  b = await openBackends();
});
afterEach(async () => {
  await b.dispose();
});

const hour = 3_600_000;
const worker = (
  now: number,
  jobs: { jobId: string; runId: string; taskKey: string; title: string; startedAt: string }[] = [],
) => ({
  id: 'host:1:abc',
  host: 'host',
  pid: 1,
  version: '0.1.0',
  queue: 'jobs',
  backend: 'local',
  concurrency: 2,
  startedAt: new Date(now - hour).toISOString(),
  lastHeartbeat: new Date(now).toISOString(),
  draining: false,
  jobs,
});
const kinds = (o: { warnings: { kind: string }[] }) => o.warnings.map((w) => w.kind).sort();

describe('overview warnings', () => {
  it('warns of nothing when jobs wait for a live worker and nothing is stuck, dead or undelivered', async () => {
    const now = Date.now();
    await b.queue.enqueue(jobOf('q-1'));
    await b.store.save(implementingRun(jobOf('r-1'), new Date(now - 60_000)));
    await b.store.heartbeatWorker(worker(now), 60_000);
    const o = await readOverview({ queue: b.queue, store: b.store, worstCaseMs: hour }, now);
    expect(o.warnings).toEqual([]);
    expect(o.perStage).toEqual({ queued: 1, implementing: 1 });
    expect(o.workers).toHaveLength(1);
    expect(o.queue.depth).toBe(1);
    expect(o.queue.oldestQueuedAt).toEqual(expect.any(Number));
  });

  it('warns of a backlog with no live worker, a dead letter, a run past its worst case and an undelivered report', async () => {
    const now = Date.now();
    await b.queue.enqueue(jobOf('q-1'));
    await b.queue.enqueue(jobOf('d-1'));
    // Claims in priority, then arrival order: q-1 first, held; then d-1, dead-lettered; then
    // q-1 given back (a released job keeps its place in line, so it is claimed while held).
    const first = await b.queue.claim({ workerId: 't' });
    const dead = await b.queue.claim({ workerId: 't' });
    await (dead?.job.id === 'd-1'
      ? dead.deadLetter('permanent')
      : Promise.reject(new Error(`claimed ${dead?.job.id}`)));
    await first?.release();
    await b.store.save(implementingRun(jobOf('slow-1'), new Date(now - 3 * hour)));
    await b.store.save(implementingRun(jobOf('fine-1'), new Date(now - 60_000)));
    await b.store.record({
      kind: 'undelivered_report',
      runId: 'fine-1',
      jobId: 'fine-1',
      report: 'finished',
      requester: 'slack',
      error: 'channel_not_found',
      at: new Date(now - 60_000).toISOString(),
    });
    const o = await readOverview({ queue: b.queue, store: b.store, worstCaseMs: hour }, now);
    expect(kinds(o)).toEqual(['dead_letters', 'no_worker', 'overdue', 'undelivered']);
    expect(o.warnings.find((w) => w.kind === 'overdue')?.href).toBe('/runs/slow-1');
  });

  it("warns once today's spend reaches the daily budget: the workers pause and the queue waits", async () => {
    const now = Date.UTC(2026, 10, 24, 12);
    await b.queue.enqueue(jobOf('q-1'));
    await b.store.heartbeatWorker(worker(Date.now()), 60_000);
    await b.store.addSpend('2026-11-24', 1.5);
    const below = await readOverview({ queue: b.queue, store: b.store, worstCaseMs: hour, dayBudgetUsd: 2 }, now);
    expect(below.spend).toEqual({ day: '2026-11-24', spentUsd: 1.5, limitUsd: 2 });
    expect(below.warnings).toEqual([]);
    await b.store.addSpend('2026-11-24', 0.5);
    const reached = await readOverview({ queue: b.queue, store: b.store, worstCaseMs: hour, dayBudgetUsd: 2 }, now);
    expect(reached.warnings).toEqual([
      {
        kind: 'day_budget',
        message: expect.stringMatching(
          /^the fleet spent \$2\.0000 of its \$2\.0000 daily budget .*until 00:00 UTC; 1 job\(s\) wait/,
        ),
      },
    ]);
    // Without a daily budget nothing is read or said.
    expect((await readOverview({ queue: b.queue, store: b.store, worstCaseMs: hour }, now)).spend).toBeUndefined();
    // The overview page shows it as a warning banner.
    const dash = await startDashboard(b, { dayBudgetUsd: 2, now: () => new Date(now) });
    try {
      const page = await (await fetch(`${dash.base}/`, { headers: { authorization: `Bearer ${token}` } })).text();
      expect(page).toMatch(
        /<li class="warning" data-kind="day_budget">the fleet spent \$2\.0000 of its \$2\.0000 daily budget/,
      );
    } finally {
      await dash.close();
    }
  });

  it('does not count the time a run waited in the queue toward its worst case', async () => {
    const now = Date.now();
    // Created three hours ago, first attempt a minute ago: queued for most of it.
    const job = jobOf('waited-1');
    const { advance, newRun, startAttempt } = await import('@codefleet/core');
    let run = newRun(job, { runId: job.id, now: new Date(now - 3 * hour) });
    run = advance(run, 'preparing', { now: new Date(now - 60_000) });
    run = startAttempt(run, { workerId: 'w', now: new Date(now - 60_000) });
    await b.store.save(run);
    await b.store.heartbeatWorker(worker(now), 60_000);
    const o = await readOverview({ queue: b.queue, store: b.store, worstCaseMs: hour }, now);
    expect(o.warnings).toEqual([]);
  });
});
