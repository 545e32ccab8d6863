import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { failedRun, jobOf, openBackends, startDashboard, token, type Backends } from './helpers.js';

// What an attacker or a careless client sends: odd query strings, retries racing a cancel.

let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;
const bearer = { authorization: `Bearer ${token}` };
const errors: unknown[] = [];

beforeEach(async () => {
  errors.length = 0;
  b = await openBackends();
  dash = await startDashboard(b, { onError: (error) => errors.push(error) });
});
afterEach(async () => {
  await dash.close();
  await b.dispose();
});

describe('the runs list', () => {
  it('reads a filter given twice (or as an object) by its first value instead of failing', async () => {
    await b.store.save(failedRun(jobOf('failed-1')));
    for (const query of ['state=failed&state=active', 'repo=octo/widgets&repo=x', 'repo[a]=1&state=failed', 'source=cli&source=&agent[]=x']) {
      const res = await fetch(`${dash.base}/runs?${query}`, { headers: bearer });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('failed-1');
    }
    expect(errors).toEqual([]);
  });
});
