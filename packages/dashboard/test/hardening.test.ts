import { request, type IncomingHttpHeaders } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { waitFor } from '@codefleet/testkit';
import { createDashboard } from '../src/index.js';
import {
  failedRun,
  implementingRun,
  jobOf,
  login,
  openBackends,
  startDashboard,
  token,
  type Backends,
} from './helpers.js';

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
    for (const query of [
      'state=failed&state=active',
      'repo=octo/widgets&repo=x',
      'repo[a]=1&state=failed',
      'source=cli&source=&agent[]=x',
      // A source the store does not know is dropped like an unknown state, never a failed page.
      'source=github&state=failed',
    ]) {
      const res = await fetch(`${dash.base}/runs?${query}`, { headers: bearer });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('failed-1');
    }
    expect(errors).toEqual([]);
  });
});

describe('retry', () => {
  it('keeps a cancel asked for the task when the task is already queued or running as another job', async () => {
    const first = jobOf('failed-2');
    await b.store.save(failedRun(first));
    // The same task runs again as another job (a second retry, a new trigger), and someone cancels it.
    const again = jobOf('again-2', { idempotency_key: first.idempotency_key });
    await b.queue.enqueue(again);
    await b.store.requestCancel(first.idempotency_key, 'bob');
    const retry = await fetch(`${dash.base}/runs/failed-2/retry`, { method: 'POST', headers: bearer });
    expect(retry.status).toBe(409);
    expect(await b.store.cancelRequested(first.idempotency_key)).toMatchObject({ by: 'bob' });
  });

  it('clears a cancel left on the task before queueing the retry, so the new job is not cancelled', async () => {
    const first = jobOf('cancelled-3');
    await b.store.save(failedRun(first));
    await b.store.requestCancel(first.idempotency_key, 'bob');
    expect((await fetch(`${dash.base}/runs/cancelled-3/retry`, { method: 'POST', headers: bearer })).status).toBe(200);
    expect(await b.store.cancelRequested(first.idempotency_key)).toBeUndefined();
    expect((await b.queue.stats()).ready).toBe(1);
  });
});

describe('live streams', () => {
  it('refuses a stream past the bound with an event the page shows, and takes one again once a stream closes', async () => {
    await dash.close();
    dash = await startDashboard(b, { maxStreams: 2 });
    const open = async () => {
      const controller = new AbortController();
      const res = await fetch(`${dash.base}/events?view=overview`, { headers: bearer, signal: controller.signal });
      const reader = res.body!.getReader();
      return { res, controller, reader, first: await readChunk(reader) };
    };
    const accepted = /^retry: 3000\n\n/;
    const first = await open();
    const second = await open();
    expect([first.first, second.first]).toEqual([expect.stringMatching(accepted), expect.stringMatching(accepted)]);
    const third = await open();
    // 200 with an event: an EventSource drops a non-200 answer without telling the page why.
    expect(third.res.status).toBe(200);
    let refused = third.first;
    for (let more = await third.reader.read(); !more.done; more = await third.reader.read())
      refused += new TextDecoder().decode(more.value);
    expect(refused).toMatch(
      /^retry: 30000\nevent: refused\ndata: Live updates paused: the dashboard has as many live views open as it serves \(2\)/,
    );
    first.controller.abort();
    await waitFor(
      async () => {
        const next = await open();
        next.controller.abort();
        return accepted.test(next.first);
      },
      { what: 'a stream once one closed' },
    );
    second.controller.abort();
  });
});

describe('live streams per client', () => {
  it("refuses a browser's stream past its own bound while another browser still gets one", async () => {
    await dash.close();
    dash = await startDashboard(b, { maxStreams: 32, maxStreamsPerClient: 2 });
    const [first, second] = [await login(dash.base), await login(dash.base)];
    const controllers: AbortController[] = [];
    const open = async (headers: Record<string, string>) => {
      const controller = new AbortController();
      controllers.push(controller);
      const res = await fetch(`${dash.base}/events?view=overview`, { headers, signal: controller.signal });
      return readChunk(res.body!.getReader());
    };
    const accepted = /^retry: 3000\n\n/;
    expect(await open({ cookie: first })).toMatch(accepted);
    expect(await open({ cookie: first })).toMatch(accepted);
    expect(await open({ cookie: first })).toMatch(
      /^retry: 30000\nevent: refused\ndata: Live updates paused: too many live views are open in this browser \(at most 2\); close a tab/,
    );
    expect(await open({ cookie: second })).toMatch(accepted);
    // A bearer client is a client of its own (per operator and address).
    expect(await open(bearer)).toMatch(accepted);
    for (const controller of controllers) controller.abort();
  });
});

/** The next chunk of a streamed answer. */
async function readChunk(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<string> {
  return new TextDecoder().decode((await reader.read()).value);
}

describe('DNS rebinding', () => {
  // A page of evil.example whose name now resolves to 127.0.0.1: its requests carry its own
  // Host and Origin, which agree, so the same-origin check passes. It has no session cookie.
  // (fetch sets Host itself; node:http sends the one given.)
  const send = (path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
    new Promise<{ status: number; headers: IncomingHttpHeaders }>((resolve, reject) => {
      const port = new URL(dash.base).port;
      const req = request(
        `${dash.base}${path}`,
        {
          method: init.method ?? 'GET',
          headers: { host: `evil.example:${port}`, origin: `http://evil.example:${port}`, ...init.headers },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
        },
      );
      req.on('error', reject);
      req.end(init.body);
    });
  const formOf = (body: string) => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });

  it('gets nothing without the token: no page, no data, no action, no session', async () => {
    await b.store.save(failedRun(jobOf('failed-4')));
    const page = await send('/runs/failed-4', { headers: { accept: 'text/html' } });
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('/login');
    for (const path of ['/runs', '/runs/failed-4/record.json', '/events?view=overview']) {
      expect((await send(path)).status).toBe(401);
    }
    expect((await send('/runs/failed-4/retry', formOf('csrf=x'))).status).toBe(401);
    const guess = await send('/login', formOf('token=guess'));
    expect(guess.status).toBe(401);
    expect(guess.headers['set-cookie']).toBeUndefined();
    expect((await b.queue.stats()).ready).toBe(0);
  });

  it('refuses a token short enough for such a page to guess through the login form', () => {
    const start = (operators: Record<string, string>) =>
      createDashboard({ queue: b.queue, store: b.store, operators, worstCaseMs: 1000 });
    expect(() => start({ dashboard: 'hunter2' })).toThrow(expect.objectContaining({ code: 'invalid_config' }));
    expect(() => start({ alice: token, bob: 'x'.repeat(15) })).toThrow(/operator bob must be at least 16 characters/);
    // Two operators with one token: the journal could not tell them apart.
    expect(() => start({ alice: token, bob: token })).toThrow(/same token/);
    expect(() => start({})).toThrow(/lets no one in/);
  });
});

describe('numbers that read right', () => {
  it('gives a run still going its time so far, not the time to its last update', async () => {
    const now = Date.now();
    // Implementing since 50 minutes ago: an agent at work writes nothing to the run record.
    await b.store.save(implementingRun(jobOf('long-1'), new Date(now - 50 * 60_000)));
    const page = await (await fetch(`${dash.base}/runs`, { headers: bearer })).text();
    const row = page.slice(page.indexOf('long-1'));
    expect(row).toMatch(/<td>(50|51)m \d\ds<small>so far<\/small><\/td>/);
  });
});

describe('long ids', () => {
  it('shows the run of a job whose id has the longest length a job id may have', async () => {
    const id = 'j'.repeat(128);
    await b.store.save(failedRun(jobOf(id)));
    expect((await fetch(`${dash.base}/runs/${id}`, { headers: bearer })).status).toBe(200);
    expect((await fetch(`${dash.base}/runs/${id}~2`, { headers: bearer })).status).toBe(404);
    expect((await fetch(`${dash.base}/runs/${id}/retry`, { method: 'POST', headers: bearer })).status).toBe(200);
  });
});
