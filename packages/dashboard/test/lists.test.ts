import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { finish, newRun } from '@codefleet/core';
import { failedRun, implementingRun, jobOf, openBackends, startDashboard, token, type Backends } from './helpers.js';

// The runs list and the dead letters page by cursor with a total; a run's cancel shows its reason.

let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;
/** What the dashboard told requesters of jobs cancelled in the queue. */
const reported: { jobId: string; runId: string; by: string }[] = [];
const bearer = { authorization: `Bearer ${token}` };
const get = async (path: string) => (await fetch(`${dash.base}${path}`, { headers: bearer })).text();
/** The run ids linked from a runs page, in order. */
const runIdsOf = (page: string) => [...page.matchAll(/<td><a href="\/runs\/([^"]+)">/g)].map((m) => m[1]);
const olderHref = (page: string) => /<a href="([^"]+)" rel="next"/.exec(page)?.[1]?.replaceAll('&amp;', '&');

beforeAll(async () => {
  b = await openBackends();
  dash = await startDashboard(b, {
    reportCancelled: async (job, run, by) => {
      reported.push({ jobId: job.id, runId: run.run_id, by });
    },
  });
  const start = Date.parse('2026-01-01T00:00:00Z');
  // 230 runs a minute apart: every fifth one failed.
  for (let i = 0; i < 230; i++) {
    const at = new Date(start + i * 60_000);
    const job = jobOf(`run-${String(i).padStart(3, '0')}`, { title: `task ${i}` });
    await b.store.save(i % 5 === 0 ? failedRun(job, at) : newRun(job, { runId: job.id, now: at }));
  }
});
afterAll(async () => {
  await dash.close();
  await b.dispose();
});

describe('the runs list', () => {
  it('pages through every run by cursor, newest first, with the total under a filter too', async () => {
    const seen: string[] = [];
    let path: string | undefined = '/runs';
    const counts: string[] = [];
    while (path !== undefined) {
      const page = await get(path);
      seen.push(...(runIdsOf(page) as string[]));
      counts.push(/<span data-total="230">([^<]*)<\/span>/.exec(page)?.[1] ?? 'no total');
      path = olderHref(page);
    }
    expect(counts).toEqual([
      '1–50 of 230 runs',
      '51–100 of 230 runs',
      '101–150 of 230 runs',
      '151–200 of 230 runs',
      '201–230 of 230 runs',
    ]);
    expect(seen).toHaveLength(230);
    expect(new Set(seen).size).toBe(230);
    expect(seen[0]).toBe('run-229');
    expect(seen.at(-1)).toBe('run-000');

    const failed = await get('/runs?state=failed');
    expect(failed).toContain('1–46 of 46 runs');
    expect(olderHref(failed)).toBeUndefined();
    expect(runIdsOf(failed)[0]).toBe('run-225');
    // A later page keeps the filters, and links back to the first.
    const second = await get(olderHref(await get('/runs?repo=octo%2Fwidgets')) ?? '');
    expect(second).toContain('51–100 of 230 runs');
    expect(second).toContain('href="/runs?repo=octo%2Fwidgets" rel="first"');
    // A cursor the store did not give is named and the first page shown.
    const bad = await get('/runs?cursor=not-a-cursor&from=500');
    expect(bad).toContain('Ignored filters that are not understood: cursor');
    expect(bad).toContain('1–50 of 230 runs');
  });
});

describe('the dead letters', () => {
  it('page by position with their total', async () => {
    for (let i = 0; i < 53; i++) await b.queue.enqueue(jobOf(`dead-${i}`, { title: `dead ${i}`, repo: `octo/r${i}` }));
    for (let i = 0; i < 53; i++) {
      const lease = await b.queue.claim({ workerId: 'w' });
      await lease?.deadLetter(`broken ${i}`);
    }
    const first = await get('/dead-letters');
    expect(first).toContain('1–50 of 53 dead letters');
    expect([...first.matchAll(/<td>broken \d+<\/td>/g)]).toHaveLength(50);
    const next = await get(olderHref(first) ?? '');
    expect(next).toContain('51–53 of 53 dead letters');
    expect([...next.matchAll(/<td>broken \d+<\/td>/g)].map((m) => m[0])).toEqual([
      '<td>broken 50</td>',
      '<td>broken 51</td>',
      '<td>broken 52</td>',
    ]);
    expect(olderHref(next)).toBeUndefined();
  });
});

describe("a run's cancel", () => {
  it('shows the reason the operator gave while pending and once cancelled', async () => {
    const job = jobOf('to-cancel', { title: 'Something unwanted' });
    const run = implementingRun(job);
    await b.store.save(run);
    const asked = await fetch(`${dash.base}/runs/to-cancel/cancel`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'Wrong <repo> entirely' }),
    });
    expect(asked.status).toBe(200);
    const pending = await get('/runs/to-cancel');
    expect(pending).toMatch(
      /data-cancel="pending">Cancel requested by dashboard .*Reason: <q data-cancel-reason="">Wrong &lt;repo&gt; entirely<\/q>/,
    );
    await b.store.save(
      finish(run, 'cancelled', {
        now: new Date(),
        error: { code: 'cancelled', verdict: 'permanent', message: 'cancel requested by @dashboard' },
      }),
    );
    await b.store.clearCancel(job.idempotency_key);
    const done = await get('/runs/to-cancel');
    expect(done).toMatch(
      /data-cancel="done">Cancelled by dashboard .*Reason: <q data-cancel-reason="">Wrong &lt;repo&gt; entirely/,
    );
  });
});

describe('queued jobs', () => {
  it('are listed, open on a page of their own and cancel with a reason before any claim', async () => {
    const job = jobOf('queued-1', { title: 'Waiting <for> a worker', repo: 'octo/queued' });
    await b.queue.enqueue(job);
    const list = await get('/queue');
    expect(list).toContain('href="/queue/queued-1">Waiting &lt;for&gt; a worker</a>');
    expect(list).toContain('its turn');
    expect(await get('/queue/queued-1')).toContain('octo/queued');
    const cancel = (body: Record<string, string>) =>
      fetch(`${dash.base}/queue/queued-1/cancel`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await cancel({})).status).toBe(400);
    expect((await b.queue.pending()).map((p) => p.id)).toContain('queued-1');
    expect(reported).toEqual([]);
    const done = await cancel({ reason: 'Filed twice' });
    expect(await done.json()).toEqual({ ok: true, message: 'cancelled queued job queued-1', runId: 'queued-1' });
    expect((await b.queue.pending()).map((p) => p.id)).not.toContain('queued-1');
    // Whoever asked for it is told, once, as a worker tells of a job it stops.
    expect(reported).toEqual([{ jobId: 'queued-1', runId: 'queued-1', by: 'dashboard' }]);
    // Recorded as a cancelled run, with who and why, and its page is where the job's link leads now.
    const run = await b.store.get('queued-1');
    expect(run).toMatchObject({ stage: 'cancelled', outcome: 'cancelled', error: { code: 'cancelled' } });
    const moved = await fetch(`${dash.base}/queue/queued-1`, { headers: bearer, redirect: 'manual' });
    expect(moved.headers.get('location')).toBe('/runs/queued-1');
    expect(await get('/runs/queued-1')).toMatch(
      /data-cancel="done">Cancelled by dashboard .*Reason: <q data-cancel-reason="">Filed twice/,
    );
    expect(await b.store.journal({ runId: 'queued-1' })).toEqual([
      expect.objectContaining({ action: 'cancel', jobId: 'queued-1', by: 'dashboard', detail: 'Filed twice' }),
    ]);
    // Not waiting any more: refused, pointing at the run.
    const again = await cancel({ reason: 'again' });
    expect(again.status).toBe(409);
    expect(reported).toHaveLength(1);
    expect((await again.json()) as unknown).toMatchObject({ runId: 'queued-1' });
    const unknown = await fetch(`${dash.base}/queue/no-such-job/cancel`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'x' }),
    });
    expect(unknown.status).toBe(404);
  });
});
