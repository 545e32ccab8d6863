import { afterEach, describe, expect, it } from '@jest/globals';
import { advance, finish, newRun, startAttempt, type RunRecord } from '@codefleet/core';
import { durationBuckets, type RunStore } from '../src/index.js';
import { job } from './contract.js';

/** Two handles on the same data: two processes (or hosts) of one fleet. */
export interface SharedStores {
  stores: [RunStore, RunStore];
  dispose(): Promise<void>;
}

/** The spend ledger part of the run store contract, run against every adapter. */
export function spendContract(name: string, open: () => Promise<SharedStores>): void {
  describe(`run store spend ledger: ${name}`, () => {
    const opened: SharedStores[] = [];
    const fresh = async () => {
      const o = await open();
      opened.push(o);
      return o.stores;
    };
    afterEach(async () => {
      for (const o of opened.splice(0)) {
        for (const store of o.stores) await store.close();
        await o.dispose();
      }
    });

    it('adds per UTC day and resolves the new total; an unknown day has spent 0', async () => {
      const [store] = await fresh();
      expect(await store.spentOn('2026-11-24')).toBe(0);
      expect(await store.addSpend('2026-11-24', 0.25)).toBeCloseTo(0.25, 10);
      expect(await store.addSpend('2026-11-24', 0.5)).toBeCloseTo(0.75, 10);
      expect(await store.addSpend('2026-11-25', 0)).toBe(0);
      expect(await store.spentOn('2026-11-24')).toBeCloseTo(0.75, 10);
      expect(await store.spentOn('2026-11-25')).toBe(0);
    });

    it('adds from several processes at once without losing one', async () => {
      const [a, b] = await fresh();
      await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).addSpend('2026-11-24', 0.01)));
      expect(await a.spentOn('2026-11-24')).toBeCloseTo(0.2, 10);
      expect(await b.spentOn('2026-11-24')).toBeCloseTo(0.2, 10);
    });

    it('refuses a day that is not YYYY-MM-DD and an amount that is not finite and ≥ 0', async () => {
      const [store] = await fresh();
      for (const call of [
        () => store.addSpend('24.11.2026', 1),
        () => store.spentOn('today'),
        () => store.addSpend('2026-11-24', -1),
        () => store.addSpend('2026-11-24', Number.NaN),
        () => store.addSpend('2026-11-24', Infinity),
      ]) {
        await expect(call()).rejects.toMatchObject({ code: 'invalid_job' });
      }
      expect(await store.spentOn('2026-11-24')).toBe(0);
    });

    it('sums spend by repository, agent and model over a range of days, and ranks the top spenders', async () => {
      const [a, b] = await fresh();
      await a.addSpend('2026-11-23', 9, { repo: 'octo/old', agent: 'claude', model: 'opus' });
      await a.addSpend('2026-11-24', 0.5, { repo: 'octo/widgets', agent: 'claude', model: 'sonnet' });
      await b.addSpend('2026-11-24', 0.25, { repo: 'octo/gadgets', agent: 'codex' });
      await b.addSpend('2026-11-26', 1, { repo: 'octo/gadgets', agent: 'codex', model: 'gpt-5' });
      await a.addSpend('2026-11-26', 0.1);
      const stats = await b.fleetStats({ from: '2026-11-24', to: '2026-11-26', top: 2 });
      expect(stats.days.map((d) => [d.day, d.spentUsd])).toEqual([
        ['2026-11-24', 0.75],
        ['2026-11-25', 0],
        ['2026-11-26', expect.closeTo(1.1, 10)],
      ]);
      expect(stats.top.repo).toEqual([
        { name: 'octo/gadgets', usd: 1.25 },
        { name: 'octo/widgets', usd: 0.5 },
      ]);
      expect(stats.top.agent).toEqual([
        { name: 'codex', usd: 1.25 },
        { name: 'claude', usd: 0.5 },
      ]);
      expect(stats.top.model).toEqual([
        { name: 'gpt-5', usd: 1 },
        { name: 'sonnet', usd: 0.5 },
      ]);
      for (const range of [
        { from: '2026-11-26', to: '2026-11-24' },
        { from: '2026-01-01', to: '2026-12-31' },
        { from: 'yesterday', to: '2026-11-24' },
      ])
        await expect(a.fleetStats(range)).rejects.toMatchObject({ code: 'invalid_job' });
    });

    it('counts a finished run once, in the hour it finished, with the time of each stage', async () => {
      const [a, b] = await fresh();
      const start = Date.now() - 3 * 3_600_000;
      const at = (min: number) => new Date(start + min * 60_000);
      const ran = (id: string): RunRecord => {
        let run = startAttempt(newRun({ ...job(1), id }, { runId: id, now: at(0) }), { workerId: 'w', now: at(0) });
        run = advance(run, 'preparing', { now: at(0) });
        run = advance(run, 'planning', { now: at(0.5) });
        run = advance(run, 'implementing', { now: at(1) });
        return advance(run, 'testing', { now: at(9) });
      };
      await a.save(ran('run-going'));
      const failed = finish(ran('run-failed'), 'failed', { now: at(10) });
      // Saved finished three times by two processes, as a worker's last saves may be.
      await a.save(failed);
      await b.save(failed);
      await a.save({ ...failed, updated_at: at(11).toISOString() });
      await b.save(finish(ran('run-cancelled'), 'cancelled', { now: at(10) }));
      const day = at(10).toISOString().slice(0, 10);
      const { days } = await a.fleetStats({ from: day, to: day });
      const hour = at(10).getUTCHours();
      expect(days[0]?.hours[hour]).toEqual({ failed: 1, cancelled: 1 });
      expect(days[0]?.hours.filter((h) => Object.keys(h).length > 0)).toHaveLength(1);
      const bucket = (seconds: number) =>
        durationBuckets.map((_, i) => i).find((i) => seconds <= durationBuckets[i]!) ?? durationBuckets.length;
      // 30 s preparing and planning, 8 min implementing, 1 min testing: two runs each.
      for (const [stage, seconds] of [
        ['preparing', 30],
        ['planning', 30],
        ['implementing', 480],
        ['testing', 60],
      ] as const) {
        const counts = days[0]?.stages[stage];
        expect(counts?.[bucket(seconds)]).toBe(2);
        expect(counts?.reduce((x, y) => x + y, 0)).toBe(2);
      }
    });
  });
}
