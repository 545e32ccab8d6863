import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { SqliteRunStore } from '@codefleet/store';
import { budgetCheck } from '../src/commands/budget-check.js';

const costs = (yaml: string) => parseConfig(yaml, { env: {}, baseDir: '/tmp', hostname: 'h' }).config.costs;
const now = new Date(Date.UTC(2026, 10, 24, 15));

describe('doctor: spend today against the daily budget', () => {
  it('says what was spent today, the limit, and that the workers are paused (with the fix) once it is reached', async () => {
    const store = new SqliteRunStore(':memory:');
    try {
      expect(await budgetCheck(store, costs(''), now)).toEqual({
        ok: true,
        what: 'spend today (2026-11-24 UTC): $0.0000, no daily budget (costs.budget_usd.day)',
      });
      await store.addSpend('2026-11-24', 1.5);
      await store.addSpend('2026-11-23', 100);
      const limited = costs('costs:\n  budget_usd: { day: 2, job: 0.5 }\n');
      expect(await budgetCheck(store, limited, now)).toEqual({
        ok: true,
        what: 'spend today (2026-11-24 UTC): $1.5000 of the $2.0000 daily budget; $0.5000 a job',
      });
      await store.addSpend('2026-11-24', 0.5);
      expect(await budgetCheck(store, limited, now)).toEqual({
        ok: false,
        what: 'spend today (2026-11-24 UTC): $2.0000 of the $2.0000 daily budget: workers are paused, claiming nothing until 00:00 UTC (queued jobs wait); $0.5000 a job',
        fix: 'wait for the next UTC day, or raise costs.budget_usd.day in config.yaml and restart the workers',
      });
    } finally {
      await store.close();
    }
  });
});
