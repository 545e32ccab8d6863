import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { advance, CodefleetError, finish, newRun, setPublication, startAttempt, type Job } from '@codefleet/core';
import { silentLogger } from '@codefleet/log';
import { createHttpApi, maxRequestBytes, openApiDocument, type HttpApi } from '../src/index.js';
import { apiConfig, openBackends, recordingRequester, token } from './helpers.js';
import { exchangeProblems, recordingFetch, type Exchange } from './openapi-check.js';

// Every request below goes through this fetch, so the last test can check each answer
// the server gave against docs/openapi.json.
const exchanges: Exchange[] = [];
const fetch = recordingFetch(exchanges);

let backends: Awaited<ReturnType<typeof openBackends>>;
let api: HttpApi;
let requester: ReturnType<typeof recordingRequester>;
let ids: number;

beforeEach(async () => {
  backends = await openBackends();
  requester = recordingRequester();
  ids = 0;
  api = createHttpApi({
    config: apiConfig(),
    queue: backends.queue,
    store: backends.store,
    requester,
    log: silentLogger(),
    newId: () => `api-${++ids}`,
  });
  await api.listen();
});
afterEach(async () => {
  await api.close();
  await backends.dispose();
});

const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
async function call(
  method: string,
  path: string,
  options: { body?: unknown; raw?: string; headers?: Record<string, string> } = {},
) {
  const response = await fetch(`${api.url}${path}`, {
    method,
    headers: { ...auth, ...options.headers },
    ...(options.raw !== undefined
      ? { body: options.raw }
      : options.body === undefined
        ? {}
        : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>),
  };
}
const depth = async () => (await backends.queue.stats()).depth;
const now = () => new Date();
const task = { repo: 'acme/widgets', title: 'Fix the parser', body: 'It fails on empty input.', priority: 'high' };

describe('POST /v1/jobs', () => {
  it('refuses a missing or wrong bearer token with 401 before reading the body: nothing queued', async () => {
    for (const authorization of [undefined, 'Bearer wrong', `Basic ${token}`, `Bearer ${token}x`]) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (authorization !== undefined) headers.authorization = authorization;
      const response = await fetch(`${api.url}/v1/jobs`, { method: 'POST', headers, body: JSON.stringify(task) });
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ error: 'unauthorized' });
    }
    expect((await call('GET', '/v1/jobs/api-1', { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
    expect(await depth()).toBe(0);
    expect(requester.reports).toEqual([]);
  });

  it('queues a job: 201 with id, status and links, the api source, and a queued report', async () => {
    const created = await call('POST', '/v1/jobs', {
      body: {
        ...task,
        callback_url: 'http://127.0.0.1:9/hook',
        dod: ['npm test'],
        base_commit: 'c0ffee'.padEnd(40, '0'),
        patch: '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n',
        hidden_tests: { patch: '--- a/t\n+++ b/t\n@@ -1 +1 @@\n-a\n+b\n', tests: ['t > passes'] },
      },
      headers: { 'idempotency-key': 'req-1' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: 'api-1',
      status: 'queued',
      links: { self: '/v1/jobs/api-1', cancel: '/v1/jobs/api-1/cancel' },
    });
    const lease = await backends.queue.claim({ workerId: 'w' });
    expect(lease?.job).toMatchObject({
      id: 'api-1',
      repo: 'acme/widgets',
      title: 'Fix the parser',
      priority: 'high',
      dod: [['npm', 'test']],
      base_commit: 'c0ffee'.padEnd(40, '0'),
      patch: '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n',
      hidden_tests: { patch: '--- a/t\n+++ b/t\n@@ -1 +1 @@\n-a\n+b\n', tests: ['t > passes'] },
      requested_by: 'api',
      source: { kind: 'api', request_id: 'req-1', callback_url: 'http://127.0.0.1:9/hook' },
    });
    expect(requester.reports.map((r) => [r.kind, r.job.id])).toEqual([['queued', 'api-1']]);
  });

  it('returns the existing job for a replayed Idempotency-Key, and 422 for the key with another body', async () => {
    const headers = { 'idempotency-key': 'same-key' };
    const first = await call('POST', '/v1/jobs', { body: task, headers });
    // The same JSON with its keys in another order is the same request.
    const reordered = Object.fromEntries(Object.entries(task).reverse());
    const again = await call('POST', '/v1/jobs', { body: reordered, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await call('POST', '/v1/jobs', { body: { ...task, title: 'Something else' }, headers });
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ error: 'idempotency_key_reused' });
    expect(await depth()).toBe(1);
    expect(requester.reports).toHaveLength(1);
    // Without a key every request is new work.
    await call('POST', '/v1/jobs', { body: task });
    expect(await depth()).toBe(2);
  });

  it('answers a replayed Idempotency-Key with where the job stands now, not always queued', async () => {
    const headers = { 'idempotency-key': 'finished-key' };
    expect((await call('POST', '/v1/jobs', { body: task, headers })).status).toBe(201);
    const job = (await backends.queue.claim({ workerId: 'w' }))?.job as Job;
    const run = startAttempt(newRun(job, { runId: job.id, now: now() }), { workerId: 'w', now: now() });
    await backends.store.save(advance(run, 'preparing', { now: now() }));
    expect((await call('POST', '/v1/jobs', { body: task, headers })).body).toMatchObject({
      id: 'api-1',
      status: 'running',
    });
    await backends.store.save(
      finish(run, 'failed', {
        now: now(),
        error: { code: 'test_failed', verdict: 'permanent', message: 'tests failed' },
      }),
    );
    const replay = await call('POST', '/v1/jobs', { body: task, headers });
    expect([replay.status, replay.body?.status]).toEqual([200, 'failed']);
    expect(await depth()).toBe(0);
  });

  it('refuses an Idempotency-Key with spaces, control characters or over 255 characters (400): nothing queued', async () => {
    for (const key of ['has space', 'x'.repeat(256), 'tab\there']) {
      const answer = await call('POST', '/v1/jobs', { body: task, headers: { 'idempotency-key': key } });
      expect([answer.status, answer.body?.field]).toEqual([400, 'Idempotency-Key']);
    }
    expect(
      (await call('POST', '/v1/jobs', { body: task, headers: { 'idempotency-key': `~!${'k'.repeat(253)}` } })).status,
    ).toBe(201);
    expect(await depth()).toBe(1);
  });

  it('answers 415 for a body that is not JSON by its content type, and 413 for one over the limit', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const answer = await call('POST', '/v1/jobs', { raw: JSON.stringify(task), headers: { 'content-type': type } });
      expect([type, answer.status, answer.body?.error]).toEqual([type, 415, 'unsupported_media_type']);
    }
    const cancel = await call('POST', '/v1/jobs/api-1/cancel', {
      raw: 'stop',
      headers: { 'content-type': 'text/plain' },
    });
    expect(cancel.status).toBe(415);
    const huge = await call('POST', '/v1/jobs', { body: { ...task, body: 'x'.repeat(maxRequestBytes) } });
    expect([huge.status, huge.body?.error]).toEqual([413, 'too_large']);
    expect(await depth()).toBe(0);
  });

  it('frees the Idempotency-Key when the queue refused the job, so a retry with it creates the job', async () => {
    await api.close();
    let refuse = true;
    const flaky = {
      enqueue: async (job: Job) => {
        if (refuse) {
          refuse = false;
          throw new CodefleetError('queue_unavailable', 'the queue is down');
        }
        return backends.queue.enqueue(job);
      },
    };
    api = createHttpApi({
      config: apiConfig(),
      queue: flaky,
      store: backends.store,
      requester,
      log: silentLogger(),
      newId: () => `api-${++ids}`,
    });
    await api.listen();
    const headers = { 'idempotency-key': 'retry-me' };
    const down = await call('POST', '/v1/jobs', { body: task, headers });
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ error: 'queue_unavailable' });
    const retried = await call('POST', '/v1/jobs', { body: task, headers });
    expect(retried.status).toBe(201);
    expect(retried.body?.id).toBe('api-2');
    expect(await depth()).toBe(1);
  });

  it('answers 400 naming the field for a bad body, and for text that is not JSON', async () => {
    const cases: [unknown, string][] = [
      [{ repo: 'acme/widgets' }, 'title'],
      [{ ...task, priority: 'urgent' }, 'priority'],
      [{ ...task, title: 42 }, 'title'],
      [{ ...task, colour: 'red' }, 'colour'],
      [{ ...task, dod: [''] }, 'dod.0'],
      [{ ...task, repo: 'not a repo at all' }, 'repo'],
      [{ ...task, base_branch: 'bad..branch' }, 'base_branch'],
      [{ ...task, base_commit: 'HEAD~1' }, 'base_commit'],
      [{ ...task, patch: '' }, 'patch'],
      [{ ...task, hidden_tests: { tests: ['t'] } }, 'hidden_tests.patch'],
      [{ ...task, hidden_tests: { patch: 'x', tests: [''] } }, 'hidden_tests.tests.0'],
    ];
    for (const [body, field] of cases) {
      const answer = await call('POST', '/v1/jobs', { body });
      expect([answer.status, answer.body?.field]).toEqual([400, field]);
      expect(String(answer.body?.message)).toContain(field);
    }
    const notJson = await call('POST', '/v1/jobs', { raw: '{"repo": "acme/widgets", ' });
    expect(notJson.status).toBe(400);
    expect(notJson.body).toMatchObject({ error: 'invalid_json' });
    expect(await depth()).toBe(0);
  });

  it('refuses a callback_url that is not https, not loopback http, or not on callback_hosts (422)', async () => {
    for (const url of [
      'http://hooks.example/x',
      'https://evil.example/x',
      'https://user:pw@127.0.0.1/x',
      'ftp://127.0.0.1/x',
    ]) {
      const answer = await call('POST', '/v1/jobs', { body: { ...task, callback_url: url } });
      expect([url, answer.status, answer.body?.field]).toEqual([url, 422, 'callback_url']);
    }
    expect(await depth()).toBe(0);
  });
});

describe('GET /v1/jobs/:id and cancel', () => {
  it('follows a job through its lifecycle from the run store', async () => {
    await call('POST', '/v1/jobs', { body: task });
    expect((await call('GET', '/v1/jobs/api-1')).body).toMatchObject({
      id: 'api-1',
      status: 'queued',
      attempts: 0,
      repo: 'acme/widgets',
    });
    const job = (await backends.queue.claim({ workerId: 'w' }))?.job as Job;
    let run = startAttempt(newRun(job, { runId: job.id, now: now() }), { workerId: 'w', now: now() });
    run = advance(advance(run, 'preparing', { now: now() }), 'planning', { now: now() });
    await backends.store.save(run);
    expect((await call('GET', '/v1/jobs/api-1')).body).toMatchObject({
      status: 'running',
      stage: 'planning',
      attempts: 1,
    });
    for (const stage of ['implementing', 'testing', 'validating', 'publishing'] as const)
      run = advance(run, stage, { now: now() });
    run = setPublication(
      run,
      {
        branch: 'ai/api-1',
        pullRequest: {
          number: 7,
          url: 'https://github.com/acme/widgets/pull/7',
          head: 'ai/api-1',
          base: 'main',
          draft: false,
        },
      },
      { now: now() },
    );
    await backends.store.save(finish(run, 'succeeded', { now: now() }));
    const done = await call('GET', '/v1/jobs/api-1');
    expect(done.body).toMatchObject({
      status: 'succeeded',
      stage: 'done',
      outcome: 'succeeded',
      pull_request: { number: 7, url: 'https://github.com/acme/widgets/pull/7', draft: false },
    });
    expect(done.body?.error).toBeUndefined();
    expect((await call('POST', '/v1/jobs/api-1/cancel')).status).toBe(409);
    expect((await call('GET', '/v1/jobs/nope')).status).toBe(404);
  });

  it('reports a failed run with its error code and message', async () => {
    await call('POST', '/v1/jobs', { body: task });
    const job = (await backends.queue.claim({ workerId: 'w' }))?.job as Job;
    const run = startAttempt(newRun(job, { runId: job.id, now: now() }), { workerId: 'w', now: now() });
    await backends.store.save(
      finish(run, 'failed', {
        now: now(),
        error: { code: 'test_failed', verdict: 'permanent', message: 'tests failed' },
      }),
    );
    expect((await call('GET', '/v1/jobs/api-1')).body).toMatchObject({
      status: 'failed',
      error: { code: 'test_failed', message: 'tests failed' },
    });
  });

  it('records a cancel for a queued job under its task key (202); unknown jobs are 404', async () => {
    await call('POST', '/v1/jobs', { body: task });
    const cancel = await call('POST', '/v1/jobs/api-1/cancel');
    expect(cancel.status).toBe(202);
    expect(cancel.body).toMatchObject({ id: 'api-1', status: 'queued', cancel_requested: true });
    expect(await backends.store.cancelRequested('api-1')).toMatchObject({ by: 'api' });
    expect(await backends.store.journal()).toEqual([
      {
        kind: 'action',
        action: 'cancel',
        jobId: 'api-1',
        taskKey: 'api-1',
        by: 'api',
        via: 'api',
        at: expect.any(String),
      },
    ]);
    expect((await call('GET', '/v1/jobs/api-1')).body).toMatchObject({ cancel_requested: true });
    expect((await call('POST', '/v1/jobs/api-404/cancel')).status).toBe(404);
    expect((await call('GET', `/v1/jobs/${'x'.repeat(128)}`)).status).toBe(404);
    const tooLong = await call('GET', `/v1/jobs/${'x'.repeat(129)}`);
    expect([tooLong.status, tooLong.body?.field]).toEqual([400, 'id']);
  });
});

describe('GET /v1/openapi.json', () => {
  it('serves the OpenAPI description without a token', async () => {
    const response = await fetch(`${api.url}/v1/openapi.json`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(openApiDocument());
  });
});

describe('docs/openapi.json', () => {
  // Last in the file: the tests above have made their requests by now.
  it('describes every answer the tests above got: its status, media type and body', () => {
    const doc = JSON.parse(
      readFileSync(fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url)), 'utf8'),
    ) as object;
    expect(exchanges.length).toBeGreaterThan(40);
    expect(exchanges.flatMap((e) => exchangeProblems(doc, e))).toEqual([]);
    // The refusals this issue was about are among them, so their check is not vacuous.
    const seen = new Set(exchanges.map((e) => e.status));
    for (const status of [200, 201, 202, 400, 401, 404, 409, 413, 415, 422, 503])
      expect([status, seen.has(status)]).toEqual([status, true]);
  });
});
