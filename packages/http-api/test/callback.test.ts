import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { classify, createJob, type Job } from '@codefleet/core';
import { silentLogger } from '@codefleet/log';
import { requesterConformance } from '@codefleet/requester/conformance';
import { createCallbackRequester, createHttpApi, verifyCallback, type CallbackPayload } from '../src/index.js';
import { apiConfig, callbackSecret, openBackends, token } from './helpers.js';
import { exchangeProblems, recordingFetch, validate, type Exchange } from './openapi-check.js';
import { startReceiver } from './receiver.js';

const secret = 'sk-test-0123456789abcdef';
// The API's answers here are checked against the description too (last test).
const exchanges: Exchange[] = [];
const apiFetch = recordingFetch(exchanges);
const noWait = async () => {};
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let backends: Awaited<ReturnType<typeof openBackends>>;
beforeAll(async () => {
  receiver = await startReceiver();
  backends = await openBackends();
});
afterAll(async () => {
  await receiver?.close();
  await backends?.dispose();
});

function apiJob(options: { id?: string; title?: string; callback?: string } = {}): Job {
  const id = options.id ?? `api-${randomBytes(4).toString('hex')}`;
  return createJob(
    {
      repo: 'acme/widgets',
      title: options.title ?? 'Fix the parser',
      requested_by: 'api',
      source: { kind: 'api', request_id: id, callback_url: options.callback ?? `${receiver.url}/hooks/${id}` },
    },
    { id, now: new Date() },
  );
}

const requester = (extra: Partial<Parameters<typeof createCallbackRequester>[0]> = {}) =>
  createCallbackRequester({
    secret: callbackSecret,
    hosts: ['127.0.0.1'],
    log: silentLogger(),
    sent: backends.store,
    secrets: [secret],
    sleep: noWait,
    ...extra,
  });

requesterConformance({
  name: 'completion webhook (signed POSTs to a loopback receiver)',
  open: async () => ({
    requester: requester(),
    job: (options) => apiJob(options),
    foreignJob: createJob(
      { repo: 'acme/widgets', source: { kind: 'api' }, title: 't', requested_by: 'ci' },
      { id: 'api-no-callback', now: new Date() },
    ),
    // What the receiver got for the job: each body as sent, so a leaked secret would show.
    observe: async (job) => ({
      messages: receiver.received.filter((r) => r.path === `/hooks/${job.id}`).map((r) => r.body),
      marks: [],
    }),
    secret,
    // The payload is JSON for a program, not a chat: nothing in it is rendered, so no
    // fragment of the answer is live syntax (its JSON encoding keeps quotes and newlines inert).
    activeSyntax: [],
    dispose: async () => {},
  }),
});

describe('completion webhook', () => {
  it('signs each POST so the receiver can verify it, with an event id to dedupe on', async () => {
    const job = apiJob();
    await requester().report({ kind: 'cancelled', job, by: 'carol' });
    const got = receiver.received.filter((r) => r.path === `/hooks/${job.id}`);
    expect(got).toHaveLength(1);
    const [request] = got;
    const header = (name: string) => request?.headers[name] as string | undefined;
    expect(header('x-codefleet-event-id')).toBe(`${job.id}:cancelled`);
    expect(
      verifyCallback({
        secret: callbackSecret,
        body: request?.body ?? '',
        timestamp: header('x-codefleet-timestamp'),
        signature: header('x-codefleet-signature'),
      }),
    ).toBe(true);
    expect(
      verifyCallback({
        secret: 'another-secret',
        body: request?.body ?? '',
        timestamp: header('x-codefleet-timestamp'),
        signature: header('x-codefleet-signature'),
      }),
    ).toBe(false);
    expect(
      verifyCallback({
        secret: callbackSecret,
        body: `${request?.body ?? ''} `,
        timestamp: header('x-codefleet-timestamp'),
        signature: header('x-codefleet-signature'),
      }),
    ).toBe(false);
    // A captured request replayed an hour later is refused.
    const later = Number(header('x-codefleet-timestamp')) + 3600;
    expect(
      verifyCallback({
        secret: callbackSecret,
        body: request?.body ?? '',
        timestamp: header('x-codefleet-timestamp'),
        signature: header('x-codefleet-signature'),
        nowSeconds: later,
      }),
    ).toBe(false);
    const payload = JSON.parse(request?.body ?? '{}') as CallbackPayload;
    expect(payload).toMatchObject({ event: 'cancelled', job_id: job.id, state: 'cancelled', cancelled_by: 'carol' });
  });

  it('retries after a 500 and a network error, then gives up after its tries', async () => {
    const job = apiJob();
    receiver.answer(500, 503);
    const waits: number[] = [];
    await requester({ sleep: async (ms) => void waits.push(ms) }).report({ kind: 'cancelled', job, by: 'carol' });
    const statuses = receiver.received.filter((r) => r.path === `/hooks/${job.id}`).map((r) => r.status);
    expect(statuses).toEqual([500, 503, 200]);
    expect(waits).toEqual([1000, 2000]);

    const dead = apiJob({ callback: 'http://127.0.0.1:9/closed' });
    const failure = await requester({ tries: 3 })
      .report({ kind: 'cancelled', job: dead, by: 'carol' })
      .catch((e: unknown) => e);
    expect(classify(failure).code).toBe('network');
  });

  it('never follows a redirect, never sends outside callback_hosts, and takes a 4xx as a refusal', async () => {
    const job = apiJob();
    receiver.answer(302);
    const redirected = await requester()
      .report({ kind: 'cancelled', job, by: 'carol' })
      .catch((e: unknown) => e);
    expect(classify(redirected).code).toBe('forge_rejected');
    expect(receiver.received.some((r) => r.path === '/elsewhere')).toBe(false);

    // Each job calls back on a path of its own: a stranger's request to the receiver's random
    // port (another suite's probe, on a busy machine) counts for neither.
    const callbacksOf = (job: Job) => receiver.received.filter((r) => r.path === `/hooks/${job.id}`);
    const outsideJob = apiJob();
    const outside = await requester({ hosts: ['hooks.example'] })
      .report({ kind: 'cancelled', job: outsideJob, by: 'carol' })
      .catch((e: unknown) => e);
    expect(classify(outside)).toMatchObject({ code: 'forge_rejected', verdict: 'permanent' });
    expect(callbacksOf(outsideJob)).toEqual([]);

    receiver.answer(410);
    const goneJob = apiJob();
    const gone = await requester()
      .report({ kind: 'cancelled', job: goneJob, by: 'carol' })
      .catch((e: unknown) => e);
    expect(classify(gone).code).toBe('forge_rejected');
    expect(callbacksOf(goneJob).map((r) => r.status)).toEqual([410]);
  });

  it('an API job with a callback_url gets its queued report there, signed', async () => {
    const callbacks = requester();
    const api = createHttpApi({
      config: apiConfig(),
      queue: backends.queue,
      store: backends.store,
      requester: callbacks,
      log: silentLogger(),
    });
    await api.listen();
    try {
      const response = await apiFetch(`${api.url}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ repo: 'acme/widgets', title: 'Fix it', callback_url: `${receiver.url}/hooks/from-api` }),
      });
      expect(response.status).toBe(201);
      const { id } = (await response.json()) as { id: string };
      const got = receiver.received.filter((r) => r.path === '/hooks/from-api');
      expect(got.map((r) => JSON.parse(r.body) as CallbackPayload)).toMatchObject([
        { event: 'queued', job_id: id, state: 'queued' },
      ]);
    } finally {
      await api.close();
    }
  });

  // Last: by now the conformance suite and the tests above have sent every kind of event.
  it("sends bodies the description's CallbackPayload schema and example describe; the API's answers match it", () => {
    const doc = JSON.parse(
      readFileSync(fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url)), 'utf8'),
    ) as Record<string, unknown>;
    const schema = { $ref: '#/components/schemas/CallbackPayload' };
    const bodies = receiver.received.filter((r) => r.body !== '').map((r) => JSON.parse(r.body) as CallbackPayload);
    expect(new Set(bodies.map((b) => b.event))).toEqual(
      new Set(['queued', 'started', 'finished', 'answered', 'failed', 'cancelled']),
    );
    expect(bodies.flatMap((body) => validate(doc, schema, body))).toEqual([]);
    const path = [
      'paths',
      '/v1/jobs',
      'post',
      'callbacks',
      'completion',
      '{$request.body#/callback_url}',
      'post',
      'requestBody',
      'content',
      'application/json',
      'example',
    ];
    const example = path.reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], doc);
    expect(example).toMatchObject({ event: 'finished' });
    expect(exchanges).toHaveLength(1);
    expect(exchanges.flatMap((e) => exchangeProblems(doc, e))).toEqual([]);
    expect(validate(doc, schema, example)).toEqual([]);
  });
});
