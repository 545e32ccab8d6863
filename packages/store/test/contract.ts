import { afterEach, describe, expect, it } from '@jest/globals';
import { advance, createJob, newRun, startAttempt, type RunRecord } from '@codefleet/core';
import { requestKeyFamily, type RequestKey, type RunStore } from '../src/index.js';

// The store's own contract holds for any key string it is given; packages make theirs with
// requestKeyFamily.
const key = (text: string) => text as RequestKey;

const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
export const job = (n: number) =>
  createJob(
    { repo: '/srv/repos/widgets', source: { kind: 'cli' }, title: `task ${n}`, body: '', requested_by: 'me' },
    { id: `job-${n}`, now: t(n) },
  );

/** The run store contract, run against every adapter. */
export function runStoreContract(
  name: string,
  open: () => Promise<{ store: RunStore; dispose(): Promise<void> }>,
): void {
  describe(`run store contract: ${name}`, () => {
    const opened: { store: RunStore; dispose(): Promise<void> }[] = [];
    const fresh = async () => {
      const o = await open();
      opened.push(o);
      return o.store;
    };
    afterEach(async () => {
      for (const o of opened.splice(0)) {
        await o.store.close();
        await o.dispose();
      }
    });

    it('round-trips a run record and lists newest first', async () => {
      const store = await fresh();
      const a = newRun(job(1), { runId: 'job-1', now: t(1) });
      const b = advance(
        startAttempt(newRun(job(2), { runId: 'job-2', now: t(2) }), { workerId: 'w', now: t(3) }),
        'preparing',
        { now: t(3) },
      );
      await store.save(a);
      await store.save(b);
      expect(await store.get('job-2')).toEqual(b);
      expect(await store.get('nope')).toBeUndefined();
      const list = await store.list();
      expect(list.map((r) => [r.runId, r.stage, r.attempts])).toEqual([
        ['job-2', 'preparing', 1],
        ['job-1', 'queued', 0],
      ]);
      // Who asked, so a chat's "/ops status" can list the sender's own jobs.
      expect(list.map((r) => r.requestedBy)).toEqual(['me', 'me']);
    });

    it('ignores a late write of an older version of the same run', async () => {
      const store = await fresh();
      const v1 = startAttempt(newRun(job(1), { runId: 'job-1', now: t(1) }), { workerId: 'stale', now: t(2) });
      const v2: RunRecord = advance(v1, 'preparing', { now: t(5) });
      await store.save(v2);
      await store.save(v1);
      expect((await store.get('job-1'))?.stage).toBe('preparing');
    });

    it('a stale worker on an earlier attempt cannot roll back the run, however fresh its clock', async () => {
      const store = await fresh();
      const first = advance(
        startAttempt(newRun(job(1), { runId: 'job-1', now: t(1) }), { workerId: 'paused', now: t(2) }),
        'preparing',
        { now: t(2) },
      );
      // The task was taken over: a new attempt, one stage in.
      const takeover = advance(
        startAttempt(advance(first, 'retry_wait', { now: t(10) }), { workerId: 'rescuer', now: t(10) }),
        'preparing',
        { now: t(10) },
      );
      await store.save(takeover);
      // The paused worker wakes up and writes many stages later, with a later clock.
      const late = advance(
        advance(advance(first, 'planning', { now: t(50) }), 'implementing', { now: t(51) }),
        'testing',
        { now: t(52) },
      );
      await store.save(late);
      const stored = await store.get('job-1');
      expect(stored?.attempts.map((a) => a.worker_id)).toEqual(['paused', 'rescuer']);
      expect(stored?.stage).toBe('preparing');
    });

    it('a holder whose attempt never reached the store still loses to the delivery after it', async () => {
      const store = await fresh();
      const queued = newRun(job(1), { runId: 'job-1', now: t(1) });
      await store.save(queued);
      // Delivery 1 starts its attempt while the store is down: the record never says so.
      const unsaved = startAttempt(queued, { workerId: 'paused', now: t(2), delivery: 1 });
      // Delivery 2 reads the record as the store has it and finishes one stage.
      const takeover = advance(startAttempt(queued, { workerId: 'rescuer', now: t(10), delivery: 2 }), 'preparing', {
        now: t(10),
      });
      await store.save(takeover);
      // The first holder wakes with more stages than the rescuer has.
      const late = advance(advance(unsaved, 'preparing', { now: t(50) }), 'planning', { now: t(51) });
      await store.save(late);
      const stored = await store.get('job-1');
      expect(stored?.attempts.map((a) => [a.n, a.worker_id])).toEqual([[2, 'rescuer']]);
      expect(stored?.stage).toBe('preparing');
    });

    it('task leases: one live owner; renew, fence and release only by the owner', async () => {
      const store = await fresh();
      expect(await store.acquire('acme/widgets#issue-7', 'tok-a', 60_000)).toBe(true);
      expect(await store.acquire('acme/widgets#issue-7', 'tok-a', 60_000)).toBe(true);
      expect(await store.acquire('acme/widgets#issue-7', 'tok-b', 60_000)).toBe(false);
      expect(await store.renew('acme/widgets#issue-7', 'tok-b', 60_000)).toBe(false);
      expect(await store.renew('acme/widgets#issue-7', 'tok-a', 60_000)).toBe(true);
      expect(await store.fence('acme/widgets#issue-7', 'tok-a', 'push', 'job-7')).toBe(true);
      await store.release('acme/widgets#issue-7', 'tok-b');
      expect(await store.acquire('acme/widgets#issue-7', 'tok-b', 60_000)).toBe(false);
      await store.release('acme/widgets#issue-7', 'tok-a');
      expect(await store.acquire('acme/widgets#issue-7', 'tok-b', 60_000)).toBe(true);
      expect(await store.rejections('acme/widgets#issue-7')).toEqual([]);
    });

    it('hand-over releases only what the old token owns and takes the next task like acquire', async () => {
      const store = await fresh();
      expect(await store.acquire('task-1', 'tok-a', 60_000)).toBe(true);
      expect(await store.acquire('task-3', 'tok-other', 60_000)).toBe(true);
      expect(
        await store.handOver({ taskKey: 'task-1', token: 'tok-a' }, { taskKey: 'task-2', token: 'tok-b' }, 60_000),
      ).toBe(true);
      expect(await store.acquire('task-1', 'tok-c', 60_000)).toBe(true);
      expect(await store.fence('task-2', 'tok-b', 'push', 'job-2')).toBe(true);
      // A stale token releases nothing; a task another token holds is not taken.
      expect(
        await store.handOver({ taskKey: 'task-1', token: 'tok-a' }, { taskKey: 'task-3', token: 'tok-d' }, 60_000),
      ).toBe(false);
      expect(await store.fence('task-1', 'tok-c', 'push', 'job-1')).toBe(true);
      expect(await store.fence('task-3', 'tok-other', 'push', 'job-3')).toBe(true);
    });

    it('an expired lease can be taken over, and the old holder is fenced off and recorded', async () => {
      const store = await fresh();
      expect(await store.acquire('task-1', 'paused', 150)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await store.renew('task-1', 'paused', 60_000)).toBe(false);
      expect(await store.acquire('task-1', 'rescuer', 60_000)).toBe(true);
      expect(await store.fence('task-1', 'paused', 'push', 'job-1')).toBe(false);
      expect(await store.fence('task-1', 'paused', 'pull_request', 'job-1')).toBe(false);
      expect(await store.fence('task-1', 'rescuer', 'push', 'job-1')).toBe(true);
      const rejected = await store.rejections('task-1');
      expect(rejected.map((r) => [r.token, r.action, r.runId])).toEqual([
        ['paused', 'push', 'job-1'],
        ['paused', 'pull_request', 'job-1'],
      ]);
      expect(rejected.every((r) => r.at > 0)).toBe(true);
    });

    it('cancel requests: recorded per task, readable by any worker, cleared by a new trigger', async () => {
      const store = await fresh();
      expect(await store.cancelRequested('acme/widgets#issue-7')).toBeUndefined();
      await store.requestCancel('acme/widgets#issue-7', 'alice');
      expect(await store.cancelRequested('acme/widgets#issue-7')).toMatchObject({
        by: 'alice',
        at: expect.any(Number),
      });
      expect(await store.cancelRequested('acme/widgets#issue-8')).toBeUndefined();
      await store.clearCancel('acme/widgets#issue-7');
      expect(await store.cancelRequested('acme/widgets#issue-7')).toBeUndefined();
    });

    it('request keys: the first binding wins until it expires; set replaces; lookup reads', async () => {
      const store = await fresh();
      expect(await store.lookupRequest(key('slack:C1:1700.1'))).toBeUndefined();
      const [a, b] = await Promise.all([
        store.bindRequest(key('slack:C1:1700.1'), 'job-a', 60_000),
        store.bindRequest(key('slack:C1:1700.1'), 'job-b', 60_000),
      ]);
      expect([a.bound, b.bound].sort()).toEqual([false, true]);
      const winner = a.bound ? 'job-a' : 'job-b';
      expect([a.value, b.value]).toEqual([winner, winner]);
      expect(await store.lookupRequest(key('slack:C1:1700.1'))).toBe(winner);
      await store.setRequest(key('thread:C1:1700.0'), 'job-a', 60_000);
      await store.setRequest(key('thread:C1:1700.0'), 'job-c', 60_000);
      expect(await store.lookupRequest(key('thread:C1:1700.0'))).toBe('job-c');
      // An expired binding is gone and can be bound again.
      await store.bindRequest(key('short'), 'old', 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await store.lookupRequest(key('short'))).toBeUndefined();
      expect(await store.bindRequest(key('short'), 'new', 60_000)).toEqual({ value: 'new', bound: true });
      await expect(store.bindRequest(key(''), 'x', 1_000)).rejects.toMatchObject({ code: 'payload_too_large' });
    });

    it('request keys: a released key is free at once, for lookup and for the next binding', async () => {
      const store = await fresh();
      await store.bindRequest(key('retry:run-1'), 'job-a', 60_000);
      await store.releaseRequest(key('retry:run-1'));
      expect(await store.lookupRequest(key('retry:run-1'))).toBeUndefined();
      expect(await store.bindRequest(key('retry:run-1'), 'job-b', 60_000)).toEqual({ value: 'job-b', bound: true });
      await store.releaseRequest(key('never-bound'));
      expect(await store.lookupRequest(key('never-bound'))).toBeUndefined();
    });

    it('request keys: a binding under the former spelling counts as the key itself until it expires', async () => {
      const store = await fresh();
      const moved = requestKeyFamily<[string]>('contract', 'moved', { formerly: 'contract-moved' });
      // What a fleet from before namespaces wrote.
      await store.setRequest(key('contract-moved:a'), 'job-old', 60_000);
      expect(moved('a')).toBe('contract:moved:a');
      expect(await store.lookupRequest(moved('a'))).toBe('job-old');
      expect(await store.bindRequest(moved('a'), 'job-new', 60_000)).toEqual({ value: 'job-old', bound: false });
      // set writes the new spelling and drops the former one.
      await store.setRequest(moved('a'), 'job-c', 60_000);
      expect(await store.lookupRequest(moved('a'))).toBe('job-c');
      expect(await store.lookupRequest(key('contract-moved:a'))).toBeUndefined();
      // release frees both spellings.
      await store.setRequest(key('contract-moved:b'), 'job-old', 60_000);
      await store.releaseRequest(moved('b'));
      expect(await store.lookupRequest(key('contract-moved:b'))).toBeUndefined();
      expect(await store.bindRequest(moved('b'), 'job-d', 60_000)).toEqual({ value: 'job-d', bound: true });
      // An expired former binding holds nothing; a family that never moved reads its own key only.
      await store.setRequest(key('contract-moved:c'), 'job-old', 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await store.bindRequest(moved('c'), 'job-e', 60_000)).toEqual({ value: 'job-e', bound: true });
      const unmoved = requestKeyFamily<[string]>('contract', 'new');
      await store.setRequest(key('contract-new:d'), 'other', 60_000);
      expect(await store.lookupRequest(unmoved('d'))).toBeUndefined();
    });
  });
}
