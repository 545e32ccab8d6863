import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  csrfOf,
  failedRun,
  implementingRun,
  jobOf,
  login,
  openBackends,
  send,
  startDashboard,
  type Backends,
} from './helpers.js';

// Who did it: each operator logs in (or sends a bearer token) with a token of their own, or
// a trusted proxy names them; cancel and drop ask for a reason first, and the journal keeps
// both.

const alice = 'alice-token-0123456789abcdef';
const bob = 'bob-token-0123456789abcdefgh';

let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;

beforeEach(async () => {
  b = await openBackends();
  dash = await startDashboard(b, {
    operators: { alice, bob },
    trustedProxy: { header: 'X-Forwarded-User', from: ['127.0.0.1'] },
  });
});
afterEach(async () => {
  await dash.close();
  await b.dispose();
});

const form = (fields: Record<string, string>, cookie: string) => ({
  method: 'POST',
  redirect: 'manual' as const,
  headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
  body: new URLSearchParams(fields).toString(),
});
const json = (token: string, body: unknown) => ({
  method: 'POST',
  headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** A dead-lettered job whose run a worker has reported failed. */
async function deadLetter(id: string): Promise<void> {
  const job = jobOf(id);
  await b.queue.enqueue(job);
  await (await b.queue.claim({ workerId: 't' }))?.deadLetter('permanent: test');
  await b.store.save(failedRun(job));
}

describe('operators', () => {
  it("confirms a cancel with a reason on a page of its own, and records the operator's name and reason", async () => {
    const job = jobOf('run-1', { title: 'Rename the widget' });
    await b.store.save(implementingRun(job));
    const cookie = await login(dash.base, alice);
    const run = await (await fetch(`${dash.base}/runs/run-1`, { headers: { cookie } })).text();
    // The run page links to the confirmation; it posts nothing itself.
    expect(run).toContain('href="/runs/run-1/cancel"');
    expect(run).not.toContain('action="/runs/run-1/cancel"');
    expect(run).toContain('data-operator="alice"');
    const confirm = await fetch(`${dash.base}/runs/run-1/cancel`, { headers: { cookie } });
    const page = await confirm.text();
    expect(confirm.status).toBe(200);
    expect(page).toContain('Rename the widget');
    expect(page).toMatch(/<textarea id="reason" name="reason" rows="3" required maxlength="500">/);
    // No reason, or a blank one: nothing is done.
    for (const reason of [undefined, '   ']) {
      const fields: Record<string, string> = { csrf: csrfOf(page), ...(reason === undefined ? {} : { reason }) };
      const refused = await fetch(`${dash.base}/runs/run-1/cancel`, form(fields, cookie));
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain('give a reason for cancelling run run-1');
    }
    expect(await b.store.cancelRequested(job.idempotency_key)).toBeUndefined();
    const done = await fetch(
      `${dash.base}/runs/run-1/cancel`,
      form({ csrf: csrfOf(page), reason: '  asked for the wrong repo ' }, cookie),
    );
    expect([done.status, done.headers.get('location')]).toEqual([303, '/runs/run-1']);
    expect(await b.store.cancelRequested(job.idempotency_key)).toMatchObject({ by: 'dashboard:alice' });
    expect(await b.store.journal({ runId: 'run-1' })).toEqual([
      expect.objectContaining({ action: 'cancel', by: 'alice', via: 'dashboard', detail: 'asked for the wrong repo' }),
    ]);
    const after = await (await fetch(`${dash.base}/runs/run-1`, { headers: { cookie } })).text();
    expect(after).toContain('Cancel requested by dashboard:alice');
    expect(after).toContain('asked for the wrong repo');
  });

  it('takes the reason in a bearer JSON call, bounded, under the bearer operator', async () => {
    const job = jobOf('run-2');
    await b.store.save(implementingRun(job));
    const none = await fetch(`${dash.base}/runs/run-2/cancel`, json(bob, {}));
    expect(none.status).toBe(400);
    const long = await fetch(`${dash.base}/runs/run-2/cancel`, json(bob, { reason: 'x'.repeat(501) }));
    expect([long.status, ((await long.json()) as { message: string }).message]).toEqual([
      400,
      'a reason has at most 500 characters',
    ]);
    const ok = await fetch(`${dash.base}/runs/run-2/cancel`, json(bob, { reason: 'duplicate' }));
    expect(ok.status).toBe(200);
    expect(await b.store.journal({ runId: 'run-2' })).toEqual([
      expect.objectContaining({ action: 'cancel', by: 'bob', detail: 'duplicate' }),
    ]);
  });

  it('says there is nothing to cancel on the confirmation page of a finished run', async () => {
    await b.store.save(failedRun(jobOf('done-1')));
    const cookie = await login(dash.base, alice);
    const page = await fetch(`${dash.base}/runs/done-1/cancel`, { headers: { cookie } });
    expect(page.status).toBe(409);
    expect(await page.text()).toContain('has already finished');
    expect((await fetch(`${dash.base}/runs/nothing-1/cancel`, { headers: { cookie } })).status).toBe(404);
  });

  it('confirms a drop on its own page, and records who dropped it and why', async () => {
    await deadLetter('dead-1');
    const cookie = await login(dash.base, bob);
    const list = await (await fetch(`${dash.base}/dead-letters`, { headers: { cookie } })).text();
    expect(list).toContain('href="/dead-letters/dead-1/drop"');
    const page = await (await fetch(`${dash.base}/dead-letters/dead-1/drop`, { headers: { cookie } })).text();
    expect(page).toContain('cannot be redriven afterwards');
    const res = await fetch(
      `${dash.base}/dead-letters/dead-1/drop`,
      form({ csrf: csrfOf(page), reason: 'spam' }, cookie),
    );
    expect(res.status).toBe(303);
    expect(await b.store.journal({ kind: 'action' })).toEqual([
      expect.objectContaining({ action: 'drop', by: 'bob', via: 'dashboard', detail: 'spam' }),
    ]);
  });

  it("keeps one operator's session apart from another's: each form token works only in its own session", async () => {
    await b.store.save(implementingRun(jobOf('run-3')));
    const asAlice = await login(dash.base, alice);
    const asBob = await login(dash.base, bob);
    const alicePage = await (await fetch(`${dash.base}/runs/run-3/cancel`, { headers: { cookie: asAlice } })).text();
    const bobPage = await (await fetch(`${dash.base}/runs/run-3/cancel`, { headers: { cookie: asBob } })).text();
    expect(csrfOf(alicePage)).not.toBe(csrfOf(bobPage));
    const crossed = await fetch(
      `${dash.base}/runs/run-3/cancel`,
      form({ csrf: csrfOf(alicePage), reason: 'x' }, asBob),
    );
    expect(crossed.status).toBe(403);
  });
});

describe('a trusted proxy', () => {
  const proxied = (path: string, user: string, from = '127.0.0.1', init: { method?: string; body?: string } = {}) =>
    send(dash.base, path, {
      ...init,
      localAddress: from,
      headers: {
        'x-forwarded-user': user,
        accept: 'text/html',
        ...(init.body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
      },
    });

  it("names the operator from the proxy's address, without a token, and records their actions", async () => {
    const job = jobOf('run-4');
    await b.store.save(implementingRun(job));
    const page = await proxied('/runs/run-4/cancel', 'carol@example.com');
    expect(page.status).toBe(200);
    expect(page.body).toContain('data-operator="carol@example.com"');
    // Their login is the proxy's: the dashboard offers no log-out.
    expect(page.body).not.toContain('action="/logout"');
    // Still a browser behind the proxy's cookie: the form token is required.
    const body = (fields: Record<string, string>) => ({ method: 'POST', body: new URLSearchParams(fields).toString() });
    expect((await proxied('/runs/run-4/cancel', 'carol@example.com', '127.0.0.1', body({ reason: 'x' }))).status).toBe(
      403,
    );
    const done = await proxied(
      '/runs/run-4/cancel',
      'carol@example.com',
      '127.0.0.1',
      body({ csrf: csrfOf(page.body), reason: 'superseded' }),
    );
    expect(done.status).toBe(303);
    expect(await b.store.journal({ runId: 'run-4' })).toEqual([
      expect.objectContaining({ action: 'cancel', by: 'carol@example.com', detail: 'superseded' }),
    ]);
    // Another proxy user's form token is not carol's.
    const dave = await proxied('/runs/run-4/cancel', 'dave');
    expect(csrfOf(dave.body)).not.toBe(csrfOf(page.body));
  });

  it('ignores the header from any other address, and a header that is not a name', async () => {
    const elsewhere = await proxied('/', 'carol', '127.0.0.2');
    expect([elsewhere.status, elsewhere.headers.location]).toEqual([303, '/login']);
    for (const user of ['', '<script>', 'a b', 'x'.repeat(65)]) {
      expect((await proxied('/', user)).status).toBe(303);
    }
  });
});
