import { describe, expect, it } from '@jest/globals';
import { finish, newRun } from '@codefleet/core';
import type { WorkerInfo } from '@codefleet/store';
import { readOverview } from '../src/index.js';
import { liveProgressOf, progressSection } from '../src/pages/run-progress.js';
import { implementingRun, jobOf, openBackends } from './helpers.js';

const worker = (jobId: string): WorkerInfo => ({
  id: 'w:1:a',
  host: 'w',
  pid: 1,
  version: '0',
  queue: 'jobs',
  backend: 'local',
  concurrency: 1,
  startedAt: '2026-01-01T00:00:00.000Z',
  lastHeartbeat: '2026-01-01T00:00:05.000Z',
  draining: false,
  jobs: [{ jobId, runId: jobId, taskKey: 'k', title: 't', startedAt: '2026-01-01T00:00:00.000Z' }],
});

describe("a run's Now section", () => {
  const job = jobOf('job-1');
  const now = Date.now();

  it("finds the run's worker by its job, only while the run is unfinished", () => {
    const running = implementingRun(job);
    expect(liveProgressOf(running, [worker('other'), worker(job.id)])?.workerId).toBe('w:1:a');
    expect(liveProgressOf(running, [worker('other')])).toBeUndefined();
    expect(liveProgressOf(finish(running, 'cancelled', { now: new Date() }), [worker(job.id)])).toBeUndefined();
  });

  it('says why there is nothing to show: queued, no live worker, no step reported yet; nothing once finished', () => {
    const text = (section: ReturnType<typeof progressSection>) => String(section);
    expect(text(progressSection(newRun(job, { runId: job.id, now: new Date() }), undefined, now))).toContain(
      'Waiting for a worker to claim it.',
    );
    const running = implementingRun(job);
    expect(text(progressSection(running, undefined, now))).toContain('No live worker reports this run now');
    expect(text(progressSection(running, { workerId: 'w', at: new Date().toISOString() }, now))).toContain(
      'has not reported a step yet',
    );
    expect(progressSection(finish(running, 'failed', { now: new Date() }), undefined, now)).toBe('');
  });
});

describe("the overview's workers", () => {
  it("keep each job's stage and step but not its output: a printed line does not re-send the overview", async () => {
    const b = await openBackends();
    try {
      const entry = worker('job-1');
      const progress = { stage: 'testing', step: 'test', lines: ['ok 1', 'ok 2'] };
      await b.store.heartbeatWorker({ ...entry, jobs: entry.jobs.map((j) => ({ ...j, progress })) }, 60_000);
      const o = await readOverview({ queue: b.queue, store: b.store, worstCaseMs: 3_600_000 }, Date.now());
      expect(o.workers[0]?.jobs[0]?.progress).toEqual({ stage: 'testing', step: 'test', lines: [] });
    } finally {
      await b.dispose();
    }
  });
});
