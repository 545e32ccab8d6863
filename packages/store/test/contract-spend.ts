import { afterEach, describe, expect, it } from '@jest/globals';
import type { RunStore } from '../src/index.js';

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
  });
}
