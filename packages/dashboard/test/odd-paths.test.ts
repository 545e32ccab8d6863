import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { failedRun, jobOf, openBackends, send, startDashboard, token, type Backends } from './helpers.js';

// Paths a scanner, a fuzzer or a curious person sends: none may crash a route (a 5xx, a
// stack trace in the log), with or without a token. Sent through node:http, which keeps
// them exactly as written.

const oddPaths = [
  '/assets/__proto__',
  '/assets/constructor',
  '/assets/toString',
  '/assets/hasOwnProperty',
  '/assets/%00',
  '/assets/dashboard.js%00',
  '/assets/..%2f..%2fpackage.json',
  '/assets/../package.json',
  '/assets/%2e%2e/%2e%2e/package.json',
  '/assets/',
  '/%00',
  '/%ZZ',
  '/..',
  '/./',
  '//',
  '/login/..',
  '/login%00',
  '/runs/%00',
  '/runs/%ZZ',
  '/runs/..',
  '/runs/../../etc/passwd',
  '/runs/__proto__',
  '/runs/constructor/record.json',
  '/runs/__proto__/cancel',
  `/runs/${'a'.repeat(300)}`,
  '/runs?__proto__[x]=1',
  '/runs?state[__proto__]=x&state=constructor',
  '/runs?created_after=%00&updated_before=9999999999999999999999',
  '/dead-letters/__proto__/drop',
  '/dead-letters/%00/drop',
  '/eval/__proto__',
  `/eval/${'0'.repeat(64)}`,
  '/events',
  '/events?view=__proto__',
  '/events?view=run&id[]=x',
  '/events?view=run&id=%00',
  '/events?view=run&id=__proto__',
  '/?__proto__=1&constructor[prototype]=1',
  '/favicon.ico/..',
];

let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;
const errors: unknown[] = [];

beforeEach(async () => {
  errors.length = 0;
  b = await openBackends();
  await b.store.save(failedRun(jobOf('failed-1')));
  dash = await startDashboard(b, { onError: (error) => errors.push(error) });
});
afterEach(async () => {
  await dash.close();
  await b.dispose();
});

describe('odd paths', () => {
  it('answer /assets/__proto__ and its kind with 404, before any login', async () => {
    for (const name of ['__proto__', 'constructor', 'toString']) {
      expect((await send(dash.base, `/assets/${name}`)).status).toBe(404);
    }
  });

  it.each([
    ['without a token', {}],
    ['with a token', { authorization: `Bearer ${token}` }],
    ['from a browser without a session', { accept: 'text/html' }],
  ])('never answer with a 5xx %s, on GET and POST', async (_name, headers: Record<string, string>) => {
    const answers: string[] = [];
    for (const path of oddPaths) {
      for (const method of ['GET', 'POST']) {
        const res = await send(dash.base, path, {
          method,
          headers: { ...headers, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
          ...(method === 'POST' ? { body: '{"reason":"x","__proto__":{"polluted":1}}' } : {}),
        });
        answers.push(`${method} ${path} ${res.status}`);
        expect(res.body).not.toMatch(/\bat .+:\d+:\d+\)/);
      }
    }
    expect(answers.filter((a) => / 5\d\d$/.test(a))).toEqual([]);
    expect(errors).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
