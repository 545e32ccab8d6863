import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { csrfOf, login, manualClock, openBackends, send, startDashboard, token, type Backends } from './helpers.js';

// Sessions that end (at their expiry, at log-out) and logins that cannot be tried at speed,
// on an injected clock: nothing here waits for time to pass.

let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;
let clock: ReturnType<typeof manualClock>;

beforeEach(async () => {
  b = await openBackends();
  clock = manualClock();
  dash = await startDashboard(b, { now: clock.now });
});
afterEach(async () => {
  await dash.close();
  await b.dispose();
});

const loginForm = (given: string, localAddress?: string) =>
  send(dash.base, '/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: given }).toString(),
    ...(localAddress === undefined ? {} : { localAddress }),
  });
const runsWith = async (cookie: string) => (await fetch(`${dash.base}/runs`, { headers: { cookie } })).status;

describe('sessions', () => {
  it('are random, not derived from the token, and carry their lifetime as Max-Age', async () => {
    const first = await loginForm(token);
    const second = await loginForm(token);
    const cookies = [first, second].map((res) => String(res.headers['set-cookie']));
    expect(cookies[0]).toMatch(
      /^codefleet_dashboard=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/,
    );
    expect(cookies[0]).not.toBe(cookies[1]);
    expect(cookies[0]).not.toContain(token);
  });

  it('end at log-out: the cookie no longer works, even if kept', async () => {
    const cookie = await login(dash.base);
    const page = await (await fetch(`${dash.base}/`, { headers: { cookie } })).text();
    const out = await fetch(`${dash.base}/logout`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: csrfOf(page) }).toString(),
    });
    expect([out.status, out.headers.get('set-cookie')]).toEqual([
      303,
      'codefleet_dashboard=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0',
    ]);
    expect(await runsWith(cookie)).toBe(401);
  });

  it('end at their expiry, counted from the login whatever is done meanwhile', async () => {
    const cookie = await login(dash.base);
    clock.advance(11 * 3_600_000);
    expect(await runsWith(cookie)).toBe(200);
    clock.advance(3_600_000);
    expect(await runsWith(cookie)).toBe(401);
  });

  it('last as long as configured, and the oldest goes when too many are open', async () => {
    await dash.close();
    dash = await startDashboard(b, { now: clock.now, sessionTtlMs: 60_000, maxSessions: 2 });
    const first = await login(dash.base);
    expect(String((await loginForm(token)).headers['set-cookie'])).toContain('Max-Age=60');
    const third = await login(dash.base);
    expect([await runsWith(first), await runsWith(third)]).toEqual([401, 200]);
    clock.advance(60_000);
    expect(await runsWith(third)).toBe(401);
  });
});

describe('the login limit', () => {
  it('answers 429 with Retry-After after ten failures from an address, right token or not, until the window passes', async () => {
    for (let i = 0; i < 10; i++) expect((await loginForm(`wrong-${i}`)).status).toBe(401);
    const limited = await loginForm(token);
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('600');
    expect(limited.headers['set-cookie']).toBeUndefined();
    expect(limited.body).toContain('Too many failed logins: try again in 10 minutes.');
    // Wrong bearer tokens are tries too, and are refused alike.
    const bearer = await send(dash.base, '/runs', { headers: { authorization: `Bearer ${token}` } });
    expect([bearer.status, bearer.headers['retry-after']]).toEqual([429, '600']);
    // Another address is not held back by this one.
    expect((await loginForm(token, '127.0.0.2')).status).toBe(303);
    clock.advance(4 * 60_000);
    expect((await loginForm(token)).headers['retry-after']).toBe('360');
    clock.advance(6 * 60_000);
    expect((await loginForm(token)).status).toBe(303);
  });

  it('counts wrong bearer tokens, and caps the failures of all addresses together', async () => {
    await dash.close();
    dash = await startDashboard(b, { now: clock.now, loginLimits: { perClient: 3, global: 5, windowMs: 60_000 } });
    const bearer = (given: string, localAddress: string) =>
      send(dash.base, '/runs', { headers: { authorization: `Bearer ${given}` }, localAddress });
    for (let i = 0; i < 3; i++) expect((await bearer('wrong-token-0123456789', '127.0.0.3')).status).toBe(401);
    expect((await bearer(token, '127.0.0.3')).status).toBe(429);
    expect((await bearer(token, '127.0.0.4')).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await loginForm('wrong', '127.0.0.4')).status).toBe(401);
    // Five failures in all: a fresh address is refused too, the form and bearer tokens alike.
    expect((await loginForm(token, '127.0.0.5')).status).toBe(429);
    expect((await bearer(token, '127.0.0.5')).status).toBe(429);
    // A session already open is not a login: it goes on working.
    clock.advance(60_000);
    const cookie = await login(dash.base);
    for (let i = 0; i < 5; i++) await loginForm('wrong', `127.0.1.${i}`);
    expect(await runsWith(cookie)).toBe(200);
  });
});
