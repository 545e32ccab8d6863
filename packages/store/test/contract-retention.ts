import { afterEach, describe, expect, it } from '@jest/globals';
import { advance, newRun } from '@codefleet/core';
import type { RequestKey, RunStore } from '../src/index.js';
import { job } from './contract.js';

const day = (n: number) => new Date(Date.UTC(2026, 0, n));

/** Run `n`, created on day `n`: cancelled (finished) or still queued (active). */
function run(n: number, finished: boolean) {
  const queued = newRun(job(n), { runId: `job-${n}`, now: day(n) });
  return finished ? advance(queued, 'cancelled', { now: day(n) }) : queued;
}

/** Retention (`RunStore.trim`), run against every adapter. */
export function retentionContract(
  name: string,
  open: () => Promise<{ store: RunStore; dispose(): Promise<void> }>,
): void {
  describe(`run store retention: ${name}`, () => {
    const opened: { store: RunStore; dispose(): Promise<void> }[] = [];
    afterEach(async () => {
      for (const o of opened.splice(0)) {
        await o.store.close();
        await o.dispose();
      }
    });

    it('trims finished runs by age and by count in batches, never an active one; old journal entries too', async () => {
      const o = await open();
      opened.push(o);
      const { store } = o;
      // Days 1-12; runs 2 and 5 still active. A batch of 3 makes the walk take several.
      for (let n = 1; n <= 12; n += 1) await store.save(run(n, n !== 2 && n !== 5));
      for (const n of [1, 3, 11])
        await store.record({
          kind: 'action',
          action: 'cancel',
          runId: `job-${n}`,
          by: 'me',
          via: 'cli',
          at: day(n).toISOString(),
        });
      await store.record({
        kind: 'undelivered_report',
        runId: 'job-1',
        jobId: 'job-1',
        report: 'failed',
        requester: 'slack',
        error: 'x',
        at: day(1).toISOString(),
      });

      expect(await store.trim({})).toEqual({ runs: 0, journal: 0, requestKeys: 0, rejections: 0 });
      // Created before day 8: 1, 3, 4, 6, 7 go; 2 and 5 are active and stay.
      expect(await store.trim({ before: day(8).getTime(), batch: 3 })).toEqual({
        runs: 5,
        journal: 3,
        requestKeys: 0,
        rejections: 0,
      });
      const ids = async () => (await store.list({ limit: 100 })).map((r) => r.runId);
      expect(await ids()).toEqual(['job-12', 'job-11', 'job-10', 'job-9', 'job-8', 'job-5', 'job-2']);
      expect((await store.page({ repo: '/srv/repos/widgets' })).total).toBe(7);
      expect((await store.page({ state: 'active' })).total).toBe(2);
      expect(await store.get('job-1')).toBeUndefined();
      expect((await store.journal()).map((e) => e.runId)).toEqual(['job-11']);
      // The newest 4 (12 to 9) stay; of the older, 8 goes, active 5 and 2 stay. Again: nothing more.
      expect(await store.trim({ keepRuns: 4, batch: 2 })).toEqual({
        runs: 1,
        journal: 0,
        requestKeys: 0,
        rejections: 0,
      });
      expect(await ids()).toEqual(['job-12', 'job-11', 'job-10', 'job-9', 'job-5', 'job-2']);
      expect((await store.trim({ keepRuns: 4, before: day(8).getTime() })).runs).toBe(0);
      // A run that finishes later goes at the next trim.
      await store.save(advance(run(2, false), 'cancelled', { now: day(13) }));
      expect((await store.trim({ before: day(3).getTime() })).runs).toBe(1);
      expect(await ids()).toEqual(['job-12', 'job-11', 'job-10', 'job-9', 'job-5']);
    });

    it('deletes expired request keys and keeps live ones', async () => {
      const o = await open();
      opened.push(o);
      const key = (text: string) => text as RequestKey;
      await o.store.setRequest(key('t:expired'), 'a', 1);
      await o.store.setRequest(key('t:live'), 'b', 60_000);
      await new Promise((resolve) => setTimeout(resolve, 5));
      const { requestKeys } = await o.store.trim({});
      expect(await o.store.lookupRequest(key('t:live'))).toBe('b');
      expect(await o.store.lookupRequest(key('t:expired'))).toBeUndefined();
      // SQLite deletes the expired row; Redis had dropped it by its TTL already.
      expect([0, 1]).toContain(requestKeys);
    });

    it('lets rejected late writes go with age', async () => {
      const o = await open();
      opened.push(o);
      const { store } = o;
      expect(await store.fence('task-1', 'stale', 'push', 'job-1')).toBe(false);
      expect((await store.trim({ before: Date.now() - 60_000 })).rejections).toBe(0);
      expect(await store.rejections('task-1')).toHaveLength(1);
      const { rejections } = await store.trim({ before: Date.now() + 60_000 });
      // SQLite deletes the row; Redis keeps it until its TTL (90 days past the newest).
      expect(await store.rejections('task-1')).toHaveLength(1 - rejections);
    });
  });
}
