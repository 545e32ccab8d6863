import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RedisRunStore } from '@codefleet/store';
import { startRedis, waitFor, type RedisServer } from '@codefleet/testkit';
import { openBackends, startDashboard, token, type Backends } from './helpers.js';

// Redis goes down under a dashboard whose run store is opened as `codefleet dashboard`
// opens it (commands wait through an outage): the pages say which backend is down instead
// of hanging or answering "internal error", and live views say so and recover.
let redis: RedisServer;
let store: RedisRunStore;
let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;
const errors: unknown[] = [];
const bearer = { authorization: `Bearer ${token}` };

beforeAll(async () => {
  redis = await startRedis();
  store = new RedisRunStore({ url: redis.url, prefix: 'dash-down' });
  b = await openBackends();
  dash = await startDashboard(
    { queue: b.queue, store },
    { backendTimeoutMs: 1000, onError: (error) => errors.push(error) },
  );
});
afterAll(async () => {
  await dash?.close();
  await store?.close();
  await b?.dispose();
  await redis?.stop();
});

describe('a backend that cannot be reached', () => {
  it('answers a page with a banner naming the run store, a client with a 503, and recovers', async () => {
    // Healthy first. The backend timeout is short so the outage shows quickly, and a loaded
    // machine can hold one answer of a live Redis past it: that is not the outage tested here.
    await waitFor(async () => (await fetch(`${dash.base}/`, { headers: bearer })).status === 200, {
      what: 'the overview while Redis is up',
    });
    await redis.kill();
    const page = await fetch(`${dash.base}/`, { headers: { ...bearer, accept: 'text/html' } });
    expect(page.status).toBe(503);
    const text = await page.text();
    expect(text).toContain('data-problem="store"');
    expect(text).toMatch(/the run store cannot be reached: /);
    const api = await fetch(`${dash.base}/runs`, { headers: bearer });
    expect(api.status).toBe(503);
    expect(await api.text()).toMatch(/^the run store cannot be reached: /);
    expect(errors.length).toBeGreaterThan(0);
    await redis.restart();
    await waitFor(async () => (await fetch(`${dash.base}/`, { headers: bearer })).status === 200, {
      what: 'the overview once Redis is back',
    });
  });

  it('tells a live view the store is down, logs it once, then sends the view again once it is back', async () => {
    const controller = new AbortController();
    const res = await fetch(`${dash.base}/events?view=overview`, { headers: bearer, signal: controller.signal });
    const reader = res.body!.getReader();
    let received = '';
    const read = async () => {
      received += new TextDecoder().decode((await reader.read()).value);
      return received;
    };
    // Healthy when Redis goes: the latest event an update. Before the outage a loaded machine
    // can hold one answer of a live Redis past the short backend timeout (a problem, logged,
    // then an update again); only what the outage caused counts.
    await waitFor(
      async () => {
        const all = await read();
        return all.lastIndexOf('event: update') > all.lastIndexOf('event: problem');
      },
      { what: 'an update as the latest event' },
    );
    errors.length = 0;
    const sinceKill = received.length;
    await redis.kill();
    const problems = () =>
      received.slice(sinceKill).split('event: problem\ndata: the run store cannot be reached').length - 1;
    await waitFor(async () => (await read()) !== '' && problems() >= 3, { what: 'three problem events' });
    expect(errors).toHaveLength(1);
    await redis.restart();
    await waitFor(
      async () => {
        const all = (await read()).slice(sinceKill);
        return all.lastIndexOf('event: update') > all.indexOf('event: problem');
      },
      { what: 'an update after Redis is back' },
    );
    controller.abort();
  });
});
