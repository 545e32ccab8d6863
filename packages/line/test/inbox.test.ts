import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { inboxEntryOf } from '@codefleet/chat';
import { silentLogger } from '@codefleet/log';
import { startLineStandIn, type LineStandIn } from '@codefleet/testkit';
import { createLineWebhook, type LineWebhook } from '../src/index.js';
import { lineConfig, openBackends, recordingChat } from './helpers.js';

// The webhook records an event before LINE gets its 200, and works from the record.
let line: LineStandIn;
let backends: Awaited<ReturnType<typeof openBackends>>;
let webhook: LineWebhook | undefined;
let chat: ReturnType<typeof recordingChat>;

beforeEach(async () => {
  line = await startLineStandIn();
  backends = await openBackends();
  chat = recordingChat(backends.queue);
});
afterEach(async () => {
  await webhook?.close();
  webhook = undefined;
  await line.close();
  await backends.dispose();
});

describe('LINE inbox', () => {
  it('has the event recorded by the time LINE gets its 200', async () => {
    // Only the routes, mounted in another server: once the processor is stopped nothing
    // handles the record, so what the 200 promises is the record itself.
    const { createHttpApp, listen } = await import('@codefleet/http-server');
    webhook = createLineWebhook({
      config: lineConfig(line),
      chat,
      store: backends.store,
      inbox: backends.inbox,
      log: silentLogger(),
    });
    const app = createHttpApp();
    await app.register(webhook.routes, { prefix: '/line' });
    const server = await listen(app, { port: 0 });
    const url = `${server.url}/line`;
    try {
      // The processor is stopped before the delivery: the record must stay in the inbox.
      await webhook.close();
      const event = line.textEvent({ text: 'a &lt; b && c > d' });
      expect((await line.deliver(url, [event])).status).toBe(200);
      const lease = await backends.inbox.claim({ workerId: 't', waitMs: 0 });
      expect(lease).toBeDefined();
      expect(inboxEntryOf(lease!.job)).toMatchObject({
        platform: 'line',
        key: event.webhookEventId,
        event: { text: 'a &lt; b && c > d', to: event.source.type === 'user' ? event.source.userId : '' },
      });
      expect(chat.seen).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("answers 500 and promises nothing when the event cannot be recorded; LINE's redelivery then goes through once", async () => {
    webhook = createLineWebhook({
      config: lineConfig(line),
      chat,
      store: backends.store,
      inbox: backends.inbox,
      log: silentLogger(),
    });
    await webhook.listen();
    const event = line.textEvent({ text: 'hello' });
    const enqueue = backends.inbox.enqueue.bind(backends.inbox);
    backends.inbox.enqueue = async () => {
      throw Object.assign(new Error('disk full'), { code: 'queue_unavailable' });
    };
    expect((await line.deliver(webhook.url, [event])).status).toBe(500);
    backends.inbox.enqueue = enqueue;
    expect((await line.deliver(webhook.url, [event], { redelivery: true })).status).toBe(200);
    await webhook.idle();
    expect(chat.seen.map((m) => m.text)).toEqual(['hello']);
    expect(line.replies).toHaveLength(1);
  });

  it('finishes a record whose first handling died half-way, answering once', async () => {
    webhook = createLineWebhook({
      config: lineConfig(line),
      chat,
      store: backends.store,
      inbox: backends.inbox,
      log: silentLogger(),
    });
    const event = line.textEvent({ text: 'hello again' });
    // A first process bound the event and died before answering: its claim is there, not `done`,
    // and its record was handed out once already (the lease ran out).
    await backends.store.bindRequest(`line:event:${event.webhookEventId}`, event.message!.id, 60_000);
    const { inboxJob } = await import('@codefleet/chat');
    const { readEvent } = await import('../src/index.js');
    const reading = readEvent({ ...event, deliveryContext: { isRedelivery: false } });
    if (reading.kind !== 'text') throw new Error('not a text event');
    await backends.inbox.enqueue(inboxJob('line', event.webhookEventId, reading.message, new Date()));
    const first = await backends.inbox.claim({ workerId: 'dead', waitMs: 0 });
    await first!.retry({ delayMs: 0, reason: 'the process died' });
    await webhook.listen();
    await webhook.idle();
    expect(chat.seen.map((m) => m.text)).toEqual(['hello again']);
    expect(line.replies).toHaveLength(1);
    // A later redelivery of the event finds it done.
    expect((await line.deliver(webhook.url, [event], { redelivery: true })).status).toBe(200);
    await webhook.idle();
    expect(chat.seen).toHaveLength(1);
    expect(line.replies).toHaveLength(1);
  });
});
