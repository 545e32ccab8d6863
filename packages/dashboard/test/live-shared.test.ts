import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { failedRun, implementingRun, jobOf, login, openBackends, startDashboard, type Backends } from './helpers.js';

// Live views share one store read per view and interval, however many tabs are open; the
// run page's markup is still each viewer's own (their form token).

let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;
const reads = { listWorkers: 0, get: new Map<string, number>() };

beforeAll(async () => {
  b = await openBackends();
  // Counts the reads each view makes once: the overview lists the workers, a run page gets its run.
  const store = new Proxy(b.store, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (key === 'listWorkers') reads.listWorkers++;
      if (key === 'get')
        return (runId: string) => {
          reads.get.set(runId, (reads.get.get(runId) ?? 0) + 1);
          return target.get(runId);
        };
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  // One read an hour: every stream below makes its first read within it.
  dash = await startDashboard({ queue: b.queue, store }, { pollMs: 3_600_000, maxStreamsPerClient: 8 });
});
afterAll(async () => {
  await dash.close();
  await b.dispose();
});

/** Opens a stream and resolves its first `update` event's data, and a way to close it. */
async function firstUpdate(path: string, cookie: string): Promise<{ data: string; close: () => void }> {
  const controller = new AbortController();
  const res = await fetch(`${dash.base}${path}`, { headers: { cookie }, signal: controller.signal });
  const reader = res.body!.getReader();
  let text = '';
  while (!/event: update\n(data: .*\n)*\n/.test(text)) {
    const chunk = await reader.read();
    if (chunk.done) throw new Error(`the stream ended before an update: ${text}`);
    text += new TextDecoder().decode(chunk.value);
  }
  return { data: text, close: () => controller.abort() };
}

describe('live views', () => {
  it('read the store once per interval for all their tabs', async () => {
    const job = jobOf('live-shared-1', { title: 'Shared by tabs' });
    // A failed run: its page has a Retry form, which carries the viewer's form token.
    await b.store.save(failedRun(job));
    const alice = await login(dash.base);
    const bob = await login(dash.base);
    const before = { workers: reads.listWorkers, run: reads.get.get(job.id) ?? 0 };

    const overviews = await Promise.all(
      Array.from({ length: 8 }, (_, i) => firstUpdate('/events?view=overview', i % 2 === 0 ? alice : bob)),
    );
    expect(reads.listWorkers - before.workers).toBe(1);
    expect(new Set(overviews.map((o) => o.data)).size).toBe(1);

    // What one tab of a run page reads, against four tabs of another run.
    const other = jobOf('live-shared-2', { title: 'Watched by one tab' });
    await b.store.save(implementingRun(other));
    const one = await firstUpdate(`/events?view=run&id=${other.id}`, alice);
    const readsOfOne = reads.get.get(other.id) ?? 0;
    expect(readsOfOne).toBeGreaterThan(0);
    const runs = await Promise.all(
      [alice, alice, bob, bob].map((cookie) => firstUpdate(`/events?view=run&id=${job.id}`, cookie)),
    );
    expect((reads.get.get(job.id) ?? 0) - before.run).toBe(readsOfOne);
    // Each viewer's forms carry their own form token: two sessions, two markups.
    const tokens = runs.map((r) => /name="csrf" value="([^"]*)"/.exec(r.data)?.[1]);
    expect(tokens[0]).toBe(tokens[1]);
    expect(tokens[2]).toBe(tokens[3]);
    expect(tokens[0]).not.toBe(tokens[2]);
    for (const stream of [...overviews, ...runs, one]) stream.close();
  });
});
