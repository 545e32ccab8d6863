import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { acceptRawBody, createHttpApp, listen, mountNodeHandler, rawBodyOf, type Listening } from '../src/index.js';

let server: Listening | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('acceptRawBody', () => {
  it('hands the route the exact bytes, whatever the content type, and leaves other routes parsed', async () => {
    const app = createHttpApp();
    const seen: Buffer[] = [];
    await app.register(async (scope) => {
      acceptRawBody(scope, 64);
      scope.post('/hook', async (req) => {
        seen.push(rawBodyOf(req.body));
        return { ok: true };
      });
    });
    app.post('/json', async (req) => req.body);
    server = await listen(app, { port: 0 });
    // Whitespace and key order a JSON parser would lose: an HMAC is over these bytes.
    const body = '{ "b":1,\n  "a" : [ 2 ] }';
    for (const type of ['application/json', 'application/x-www-form-urlencoded', 'text/plain']) {
      const res = await fetch(`${server.url}/hook`, { method: 'POST', headers: { 'content-type': type }, body });
      expect(res.status).toBe(200);
    }
    expect(seen.map((b) => b.toString('utf8'))).toEqual([body, body, body]);
    const mac = createHmac('sha256', 'k').update(seen[0]!).digest('hex');
    expect(mac).toBe(createHmac('sha256', 'k').update(body).digest('hex'));
    const parsed = await fetch(`${server.url}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(await parsed.json()).toEqual({ b: 1, a: [2] });
  });

  it('refuses a body over the limit with a 413 and never calls the route', async () => {
    const app = createHttpApp();
    let called = 0;
    await app.register(async (scope) => {
      acceptRawBody(scope, 16);
      scope.post('/hook', async () => {
        called++;
        return {};
      });
    });
    server = await listen(app, { port: 0 });
    const res = await fetch(`${server.url}/hook`, { method: 'POST', body: 'x'.repeat(17) });
    expect(res.status).toBe(413);
    expect(called).toBe(0);
  });
});

describe('mountNodeHandler', () => {
  it('gives the handler the unread request and its response', async () => {
    const app = createHttpApp();
    mountNodeHandler(app, '/raw', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => res.writeHead(201, { 'content-type': 'text/plain' }).end(`got ${Buffer.concat(chunks)}`));
    });
    app.get('/other', async () => 'other');
    server = await listen(app, { port: 0 });
    const res = await fetch(`${server.url}/raw`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(res.status).toBe(201);
    expect(await res.text()).toBe('got {"a":1}');
    expect(await (await fetch(`${server.url}/other`)).text()).toBe('other');
  });
});

describe('listen', () => {
  it('serves on a free loopback port and lets a request in flight finish on close', async () => {
    const app = createHttpApp();
    let release: () => void = () => undefined;
    const entered = new Promise<void>((resolve) => {
      app.get('/slow', async () => {
        resolve();
        await new Promise<void>((r) => (release = r));
        return 'done';
      });
    });
    const listening = await listen(app, { port: 0 });
    expect(listening.url).toBe(`http://127.0.0.1:${listening.port}`);
    const answer = fetch(`${listening.url}/slow`);
    await entered;
    const closed = listening.close();
    release();
    const res = await answer;
    expect(await res.text()).toBe('done');
    await closed;
    await expect(fetch(`${listening.url}/slow`)).rejects.toThrow();
  });
});
