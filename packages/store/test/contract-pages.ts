import { afterEach, describe, expect, it } from '@jest/globals';
import {
  addAgentRun,
  advance,
  createJob,
  finish,
  newRun,
  startAttempt,
  type AgentRun,
  type CreateJobInput,
  type RunRecord,
} from '@codefleet/core';
import type { RunQuery, RunStore } from '../src/index.js';

const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

function run(id: string, s: number, job: Partial<CreateJobInput> = {}): RunRecord {
  return newRun(
    createJob(
      { repo: 'acme/widgets', source: { kind: 'cli' }, title: `task ${id}`, requested_by: 'me', ...job },
      { id, now: t(s) },
    ),
    { runId: id, now: t(s) },
  );
}

const agentRun: AgentRun = {
  pass: 'implement',
  attempt: 1,
  inner_attempt: 1,
  agent: 'codex',
  exit_code: 0,
  signal: null,
  timed_out: false,
  duration_ms: 5,
  output_tail: '',
  changed_files: [],
  outcome: 'changed',
};

const failed = (r: RunRecord, s: number) =>
  finish(startAttempt(r, { workerId: 'w', now: t(s) }), 'failed', {
    now: t(s),
    error: { code: 'test_failed', verdict: 'permanent', message: 'tests fail' },
  });

/** Started and taken through every stage up to publishing. */
const published = (r: RunRecord) =>
  (['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const).reduce(
    (next, stage) => advance(next, stage, { now: t(1) }),
    startAttempt(r, { workerId: 'w', now: t(1) }),
  );

/** `count` copies of `template` named `<prefix>-<n>`, created at `firstSecond + n`: many runs at the cost of one. */
function copies(template: RunRecord, prefix: string, count: number, firstSecond: number): RunRecord[] {
  return Array.from({ length: count }, (_, n) => {
    const id = `${prefix}-${String(n).padStart(5, '0')}`;
    const at = t(firstSecond + n).toISOString();
    return {
      ...template,
      run_id: id,
      job: { ...template.job, id, idempotency_key: id, created_at: at },
      created_at: at,
      updated_at: at,
    };
  });
}

/** A store under test, and a bulk writer for fixtures of thousands of runs (as `save` would write them). */
export interface PagedStore {
  store: RunStore;
  fill(runs: readonly RunRecord[]): Promise<void>;
  dispose(): Promise<void>;
}

/** A store of the version before the run indexes, written raw, with one record that is not JSON. */
export interface OldStore {
  runs: readonly RunRecord[];
  notJson: { runId: string; createdAt: string };
}

/**
 * Pages of runs: every filter answers completely however far back its runs are, a run moves
 * between filters as it moves on, a cursor visits every run once in order, and a store from
 * before the run indexes is read the same once reopened. `openOld` writes `old` as that
 * version did and opens a store on it.
 */
export function pagesContract(
  name: string,
  open: () => Promise<PagedStore>,
  openOld: (old: OldStore) => Promise<{ store: RunStore; dispose(): Promise<void> }>,
): void {
  describe(`run store pages contract: ${name}`, () => {
    const opened: { store: RunStore; dispose(): Promise<void> }[] = [];
    const track = <T extends { store: RunStore; dispose(): Promise<void> }>(o: T): T => {
      opened.push(o);
      return o;
    };
    afterEach(async () => {
      for (const o of opened.splice(0)) {
        await o.store.close();
        await o.dispose();
      }
    });

    /** Every run of `query`, page by page; each page must say the same total. */
    const everyPage = async (store: RunStore, query: RunQuery) => {
      const ids: string[] = [];
      const totals = new Set<number>();
      let cursor: string | undefined;
      do {
        const page = await store.page({ ...query, ...(cursor === undefined ? {} : { cursor }) });
        ids.push(...page.runs.map((r) => r.runId));
        totals.add(page.total);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return { ids, totals: [...totals] };
    };

    it('answers completely: 1,000 failed runs behind 30,000 newer ones, and runs only old ones match', async () => {
      const { store, fill } = track(await open());
      const old = failed(run('template', 0, { repo: 'acme/old' }), 1);
      const newer = finish(published(run('template', 0)), 'succeeded', { now: t(1) });
      const failures = copies(old, 'failed', 1_000, 0);
      await fill([...failures, ...copies(newer, 'newer', 30_000, 1_000)]);

      const all = await store.list({ state: 'failed', limit: 1_000 });
      expect(all).toHaveLength(1_000);
      expect(all.map((r) => r.runId)).toEqual(failures.map((r) => r.run_id).reverse());
      const page = await store.page({ state: 'failed', limit: 1_000 });
      expect(page).toMatchObject({ total: 1_000 });
      expect(page.nextCursor).toBeUndefined();
      // Matching only runs 30,000 saves back: found, and said how many.
      expect(await store.page({ repo: 'acme/old', limit: 3 })).toMatchObject({
        runs: [{ runId: 'failed-00999' }, { runId: 'failed-00998' }, { runId: 'failed-00997' }],
        total: 1_000,
      });
      expect((await store.list({ until: t(2).toISOString() })).map((r) => r.runId)).toEqual([
        'failed-00002',
        'failed-00001',
        'failed-00000',
      ]);
      expect(await store.page({ state: 'failed', agent: 'nobody' })).toEqual({ runs: [], total: 0 });
      expect((await store.page({ limit: 1 })).total).toBe(31_000);
      expect((await store.page({ state: 'succeeded', since: t(30_000).toISOString() })).total).toBe(1_000);
      // Every failed run once, newest first, in pages; the total on each.
      const paged = await everyPage(store, { state: 'failed', repo: 'acme/old', limit: 300 });
      expect(paged.ids).toEqual(failures.map((r) => r.run_id).reverse());
      expect(paged.totals).toEqual([1_000]);
    });

    it('a run moves between filters as it moves on; a late write of an older version does not move it back', async () => {
      const { store } = track(await open());
      const ids = async (query: RunQuery) => (await store.list(query)).map((r) => r.runId);
      const queued = run('job-1', 1);
      await store.save(queued);
      expect(await ids({ state: 'queued' })).toEqual(['job-1']);
      expect(await ids({ agent: 'codex' })).toEqual([]);
      const testing = advance(
        addAgentRun(
          advance(
            advance(
              advance(startAttempt(queued, { workerId: 'w', now: t(2) }), 'preparing', { now: t(2) }),
              'planning',
              { now: t(2) },
            ),
            'implementing',
            { now: t(2) },
          ),
          agentRun,
          { now: t(3) },
        ),
        'testing',
        { now: t(4) },
      );
      await store.save(testing);
      expect(await ids({ state: 'queued' })).toEqual([]);
      expect(await ids({ state: 'testing' })).toEqual(['job-1']);
      expect(await ids({ state: 'active', agent: 'codex' })).toEqual(['job-1']);
      const done = finish(testing, 'no_changes', { now: t(5) });
      await store.save(done);
      await store.save(testing);
      expect(await ids({ state: 'testing' })).toEqual([]);
      expect(await ids({ state: 'active' })).toEqual([]);
      expect(await ids({ state: 'no_changes', agent: 'codex' })).toEqual(['job-1']);
      expect((await store.page({ state: 'active' })).total).toBe(0);
      expect((await store.page({ state: 'no_changes', repo: 'acme/widgets' })).total).toBe(1);
    });

    it('a cursor visits every run once, newest first, runs created at the same instant included', async () => {
      const { store } = track(await open());
      // Five at one instant: ordered by run id, descending, on both stores.
      const runs = [
        ...['a', 'c', 'b', 'e', 'd'].map((id) => run(`same-${id}`, 5)),
        ...[1, 2, 3, 4, 6, 7].map((s) =>
          run(`at-${s}`, s, s % 2 === 0 ? { source: { kind: 'issue', number: s } } : {}),
        ),
      ];
      for (const r of runs) await store.save(r);
      const order = ['at-7', 'at-6', 'same-e', 'same-d', 'same-c', 'same-b', 'same-a', 'at-4', 'at-3', 'at-2', 'at-1'];
      for (const limit of [1, 2, 3, 11, 50]) {
        expect(await everyPage(store, { limit })).toEqual({ ids: order, totals: [11] });
      }
      expect(await everyPage(store, { state: 'queued', limit: 2 })).toEqual({ ids: order, totals: [11] });
      expect(await everyPage(store, { source: 'github-issue', limit: 2 })).toEqual({
        ids: ['at-6', 'at-4', 'at-2'],
        totals: [3],
      });
      expect(
        await everyPage(store, { since: t(3).toISOString(), until: t(5).toISOString(), state: 'queued', limit: 4 }),
      ).toEqual({ ids: ['same-e', 'same-d', 'same-c', 'same-b', 'same-a', 'at-4', 'at-3'], totals: [7] });
      // A run saved after the first page was read does not shift the next one.
      const first = await store.page({ limit: 3 });
      await store.save(run('at-8', 8));
      const second = await store.page({
        limit: 3,
        ...(first.nextCursor === undefined ? {} : { cursor: first.nextCursor }),
      });
      expect(second.runs.map((r) => r.runId)).toEqual(['same-d', 'same-c', 'same-b']);
      expect(second.total).toBe(12);
      await expect(store.page({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: 'invalid_job' });
      await expect(store.list({ cursor: Buffer.from('12:').toString('base64url') })).rejects.toMatchObject({
        code: 'invalid_job',
      });
    });

    it('a store written before the run indexes filters, pages and counts the same once reopened', async () => {
      const agentless = failed(run('old-1', 1, { repo: 'acme/gadgets' }), 2);
      const running = advance(
        startAttempt(run('old-2', 3, { agent: 'claude' }), { workerId: 'w', now: t(4) }),
        'preparing',
        {
          now: t(4),
        },
      );
      const followUp = run('old-3', 5, { source: { kind: 'api', request_id: 'ci:acme/widgets#3' } });
      const { store } = track(
        await openOld({
          runs: [agentless, running, followUp],
          notJson: { runId: 'old-4', createdAt: t(6).toISOString() },
        }),
      );
      const ids = async (query: RunQuery) => (await store.list(query)).map((r) => r.runId);
      expect(await ids({})).toEqual(['old-4', 'old-3', 'old-2', 'old-1']);
      expect((await store.list({})).find((r) => r.runId === 'old-4')?.unreadable).toEqual(expect.any(String));
      expect(await ids({ state: 'active' })).toEqual(['old-3', 'old-2']);
      expect(await ids({ state: 'failed', repo: 'acme/gadgets' })).toEqual(['old-1']);
      expect(await ids({ agent: 'claude' })).toEqual(['old-2']);
      expect(await ids({ source: 'ci-follow-up' })).toEqual(['old-3']);
      expect(await ids({ source: 'api' })).toEqual(['old-3']);
      expect(await ids({ since: t(3).toISOString(), until: t(5).toISOString() })).toEqual(['old-3', 'old-2']);
      expect((await store.page({ limit: 1 })).total).toBe(4);
      expect((await store.page({ repo: 'acme/widgets' })).total).toBe(2);
      // Saved again by this version: it moves as any run does.
      await store.save(finish(running, 'cancelled', { now: t(9) }));
      expect(await ids({ state: 'active' })).toEqual(['old-3']);
      expect(await ids({ state: 'cancelled', agent: 'claude' })).toEqual(['old-2']);
    });
  });
}
