import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { setPublication } from '@codefleet/core';
import { waitFor } from '@codefleet/testkit';
import {
  csrfOf,
  failedRun,
  implementingRun,
  jobOf,
  login,
  openBackends,
  startDashboard,
  token,
  type Backends,
} from './helpers.js';

let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;
const bearer = { authorization: `Bearer ${token}` };

beforeEach(async () => {
  b = await openBackends();
  dash = await startDashboard(b);
});
afterEach(async () => {
  await dash.close();
  await b.dispose();
});

const form = (fields: Record<string, string>, cookie: string, extra: Record<string, string> = {}) => ({
  method: 'POST',
  redirect: 'manual' as const,
  headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...extra },
  body: new URLSearchParams(fields).toString(),
});

describe('access', () => {
  it('sends a browser without a session to the login page and refuses other clients', async () => {
    const page = await fetch(`${dash.base}/`, { redirect: 'manual', headers: { accept: 'text/html' } });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/login');
    expect((await fetch(`${dash.base}/runs`)).status).toBe(401);
    expect((await fetch(`${dash.base}/runs`, { headers: { authorization: 'Bearer wrong-token' } })).status).toBe(401);
    expect((await fetch(`${dash.base}/runs`, { headers: bearer })).status).toBe(200);
  });

  it('logs in through a form into an HttpOnly SameSite=Strict cookie that is not the token', async () => {
    const wrong = await fetch(`${dash.base}/login`, form({ token: 'not-it' }, ''));
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const res = await fetch(`${dash.base}/login`, form({ token }, ''));
    const cookie = res.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).not.toContain(token);
    const page = await fetch(`${dash.base}/`, { headers: { cookie: cookie.split(';')[0] ?? '' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Overview');
  });

  it('sets a strict Content-Security-Policy on every page', async () => {
    for (const path of ['/', '/login']) {
      const res = await fetch(`${dash.base}${path}`, { headers: bearer });
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
    }
  });
});

describe('pages', () => {
  it('escapes attacker data and links a pull request only when its URL is http(s)', async () => {
    const job = jobOf('evil-1', { title: '<script>alert(1)</script>', repo: 'octo/widgets' });
    let run = implementingRun(job);
    run = setPublication(
      run,
      { branch: 'b', pullRequest: { number: 7, url: 'javascript:alert(2)', head: 'b', base: 'main', draft: false } },
      { now: new Date() },
    );
    await b.store.save(run);
    for (const path of ['/runs', '/runs/evil-1']) {
      const text = await (await fetch(`${dash.base}${path}`, { headers: bearer })).text();
      expect(text).not.toContain('<script>alert');
      expect(text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(text).not.toContain('javascript:');
    }
  });

  it('shows the failing check first, the run record as a download, and filters the runs list', async () => {
    await b.store.save(failedRun(jobOf('failed-1')));
    await b.store.save(implementingRun(jobOf('running-1')));
    const page = await (await fetch(`${dash.base}/runs/failed-1`, { headers: bearer })).text();
    expect(page.indexOf('npm test')).toBeGreaterThan(-1);
    expect(page.indexOf('npm test')).toBeLessThan(page.indexOf('npm run build'));
    const record = await fetch(`${dash.base}/runs/failed-1/record.json`, { headers: bearer });
    expect(record.headers.get('content-disposition')).toContain('attachment');
    expect((await record.json()) as { run_id: string }).toMatchObject({ run_id: 'failed-1', stage: 'failed' });
    const failed = await (await fetch(`${dash.base}/runs?state=failed`, { headers: bearer })).text();
    expect(failed).toContain('failed-1');
    expect(failed).not.toContain('running-1');
    const active = await (await fetch(`${dash.base}/runs?state=active`, { headers: bearer })).text();
    expect(active).toContain('running-1');
    expect(active).not.toContain('failed-1');
  });
});

describe('actions', () => {
  it('cancels a running run from a form, recorded in the store and the journal', async () => {
    const job = jobOf('run-1');
    await b.store.save(implementingRun(job));
    const cookie = await login(dash.base);
    const page = await (await fetch(`${dash.base}/runs/run-1`, { headers: { cookie } })).text();
    const res = await fetch(
      `${dash.base}/runs/run-1/cancel`,
      form({ csrf: csrfOf(page), reason: 'wrong repository' }, cookie),
    );
    expect(res.status).toBe(303);
    expect(await b.store.cancelRequested(job.idempotency_key)).toMatchObject({ by: 'dashboard' });
    expect(await b.store.journal({ runId: 'run-1' })).toEqual([
      expect.objectContaining({
        kind: 'action',
        action: 'cancel',
        by: 'dashboard',
        via: 'dashboard',
        taskKey: job.idempotency_key,
        detail: 'wrong repository',
      }),
    ]);
  });

  it('refuses a cookie POST without the form token or from another origin', async () => {
    const job = jobOf('run-2');
    await b.store.save(implementingRun(job));
    const cookie = await login(dash.base);
    const page = await (await fetch(`${dash.base}/runs/run-2`, { headers: { cookie } })).text();
    expect((await fetch(`${dash.base}/runs/run-2/cancel`, form({ reason: 'r' }, cookie))).status).toBe(403);
    for (const origin of [
      'http://evil.example',
      'null',
      `http://${new URL(dash.base).hostname}.evil.example:${new URL(dash.base).port}`,
    ]) {
      expect(
        (await fetch(`${dash.base}/runs/run-2/cancel`, form({ csrf: csrfOf(page), reason: 'r' }, cookie, { origin })))
          .status,
      ).toBe(403);
    }
    expect(await b.store.cancelRequested(job.idempotency_key)).toBeUndefined();
    expect(await b.store.journal({})).toEqual([]);
    // The same host behind a TLS proxy that passes Host on: the page's origin is https.
    const proxied = await fetch(
      `${dash.base}/runs/run-2/cancel`,
      form({ csrf: csrfOf(page), reason: 'r' }, cookie, { origin: `https://${new URL(dash.base).host}` }),
    );
    expect(proxied.status).toBe(303);
  });

  it('retries a finished run as a new job of the same task, and refuses to cancel it', async () => {
    const job = jobOf('failed-2');
    await b.store.save(failedRun(job));
    const cancel = await fetch(`${dash.base}/runs/failed-2/cancel`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'too late' }),
    });
    expect(cancel.status).toBe(409);
    const retry = await fetch(`${dash.base}/runs/failed-2/retry`, { method: 'POST', headers: bearer });
    expect(retry.status).toBe(200);
    const lease = await b.queue.claim({ workerId: 't' });
    expect(lease?.job.id).not.toBe('failed-2');
    expect(lease?.job).toMatchObject({
      idempotency_key: job.idempotency_key,
      title: job.title,
      repo: job.repo,
      branch: 'ai/fix-the-widget-1a2b3c4d',
    });
    expect(await b.store.journal({ runId: 'failed-2' })).toEqual([
      expect.objectContaining({ action: 'retry', jobId: lease?.job.id }),
    ]);
  });

  it('redrives a dead-lettered job', async () => {
    const job = jobOf('dead-1');
    await b.queue.enqueue(job);
    const lease = await b.queue.claim({ workerId: 't' });
    await lease?.deadLetter('permanent: test');
    await b.store.save(failedRun(job));
    const page = await (await fetch(`${dash.base}/runs/dead-1`, { headers: bearer })).text();
    expect(page).toContain('/dead-letters/dead-1/redrive');
    const res = await fetch(`${dash.base}/dead-letters/dead-1/redrive`, { method: 'POST', headers: bearer });
    expect(res.status).toBe(200);
    expect((await b.queue.stats()).ready).toBe(1);
    expect(await b.store.journal({ kind: 'action' })).toEqual([
      expect.objectContaining({ action: 'redrive', jobId: 'dead-1', by: 'dashboard' }),
    ]);
    // The job's next run (as the worker names it) is linked from the first one, which can no longer be redriven.
    const { advance, newRun } = await import('@codefleet/core');
    await b.store.save(advance(newRun(job, { runId: 'dead-1~2', now: new Date() }), 'preparing', { now: new Date() }));
    const first = await (await fetch(`${dash.base}/runs/dead-1`, { headers: bearer })).text();
    expect(first).toContain('href="/runs/dead-1~2"');
    expect(first).not.toContain('/redrive');
    expect(first).not.toContain('/retry');
  });

  it("drops a dead letter from the form with a reason, journaled; the overview's warning clears", async () => {
    const job = jobOf('dead-2');
    await b.queue.enqueue(job);
    await (await b.queue.claim({ workerId: 't' }))?.deadLetter('permanent: test');
    await b.store.save(failedRun(job));
    const cookie = await login(dash.base);
    expect(await (await fetch(`${dash.base}/`, { headers: bearer })).text()).toContain('data-kind="dead_letters"');
    const page = await (await fetch(`${dash.base}/dead-letters`, { headers: { cookie } })).text();
    expect(page).toContain('href="/dead-letters/dead-2/drop"');
    // No reason, no drop: the job would be gone with nothing saying why.
    const bare = await fetch(`${dash.base}/dead-letters/dead-2/drop`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: ' ' }),
    });
    expect(bare.status).toBe(400);
    expect((await b.queue.stats()).deadLetter).toBe(1);
    const res = await fetch(
      `${dash.base}/dead-letters/dead-2/drop`,
      form({ csrf: csrfOf(page), reason: 'duplicate of dead-1' }, cookie),
    );
    expect([res.status, res.headers.get('location')]).toEqual([303, '/dead-letters']);
    expect(await b.queue.deadLetters()).toEqual([]);
    expect(await b.store.journal({ kind: 'action' })).toEqual([
      expect.objectContaining({
        action: 'drop',
        jobId: 'dead-2',
        runId: 'dead-2',
        by: 'dashboard',
        via: 'dashboard',
        detail: 'duplicate of dead-1',
      }),
    ]);
    expect(await (await fetch(`${dash.base}/`, { headers: bearer })).text()).not.toContain('data-kind="dead_letters"');
    // Dropping again: nothing there, nothing journaled.
    const again = await fetch(`${dash.base}/dead-letters/dead-2/drop`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'again' }),
    });
    expect(again.status).toBe(404);
    expect(await b.store.journal({ kind: 'action' })).toHaveLength(1);
  });

  it('will not drop a dead letter whose run no worker has reported finished yet', async () => {
    const job = jobOf('dead-3');
    await b.queue.enqueue(job);
    await (await b.queue.claim({ workerId: 't' }))?.deadLetter('lease lost on every attempt');
    // Its worker died mid-run: the run still says implementing until a worker reports it.
    await b.store.save(implementingRun(job));
    const drop = () =>
      fetch(`${dash.base}/dead-letters/dead-3/drop`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify({ reason: 'stuck' }),
      });
    const refused = await drop();
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { message: string }).message).toContain('not been reported failed yet');
    expect((await b.queue.stats()).deadLetter).toBe(1);
    await b.store.save(failedRun(job));
    expect((await drop()).status).toBe(200);
  });

  it("retries a run once: a double click or a later retry answers with the first retry's job", async () => {
    await b.store.save(failedRun(jobOf('failed-3')));
    const retry = async () =>
      (await fetch(`${dash.base}/runs/failed-3/retry`, { method: 'POST', headers: bearer })).json() as Promise<{
        ok: boolean;
        runId: string;
      }>;
    const first = await retry();
    const lease = await b.queue.claim({ workerId: 't' });
    await lease?.ack();
    expect(await retry()).toMatchObject({ ok: true, runId: first.runId });
    expect((await b.queue.stats()).depth).toBe(0);
    expect(await b.store.journal({ runId: 'failed-3' })).toHaveLength(1);
  });

  it('hides and refuses the actions when read-only', async () => {
    await dash.close();
    dash = await startDashboard(b, { readOnly: true });
    const job = jobOf('run-3');
    await b.store.save(implementingRun(job));
    const page = await (await fetch(`${dash.base}/runs/run-3`, { headers: bearer })).text();
    expect(page).not.toContain('/cancel');
    expect((await fetch(`${dash.base}/runs/run-3/cancel`, { method: 'POST', headers: bearer })).status).toBe(403);
    expect((await fetch(`${dash.base}/dead-letters/run-3/drop`, { method: 'POST', headers: bearer })).status).toBe(403);
    expect(await b.store.cancelRequested(job.idempotency_key)).toBeUndefined();
  });
});

describe('live updates', () => {
  it('sends an update after the run changes in the store', async () => {
    const job = jobOf('live-1');
    const run = implementingRun(job);
    await b.store.save(run);
    const controller = new AbortController();
    const res = await fetch(`${dash.base}/events?view=run&id=live-1`, { headers: bearer, signal: controller.signal });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    let received = '';
    const read = async () => {
      const chunk = await reader.read();
      received += new TextDecoder().decode(chunk.value);
      return received;
    };
    await waitFor(async () => (await read()).includes('data-state="implementing"'), { what: 'the first update' });
    const { advance } = await import('@codefleet/core');
    await b.store.save(advance(run, 'testing', { now: new Date() }));
    await waitFor(async () => (await read()).includes('data-state="testing"'), { what: 'an update after the change' });
    controller.abort();
  });
});
