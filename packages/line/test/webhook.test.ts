import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { silentLogger } from '@codefleet/log';
import { startLineStandIn, type LineStandIn } from '@codefleet/testkit';
import { createLineWebhook, type LineWebhook } from '../src/index.js';
import { lineConfig, openBackends, recordingChat } from './helpers.js';

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

async function start(section: Record<string, unknown> = {}): Promise<LineWebhook> {
  webhook = createLineWebhook({
    config: lineConfig(line, section),
    chat,
    store: backends.store,
    inbox: backends.inbox,
    log: silentLogger(),
  });
  await webhook.listen();
  return webhook;
}

describe('LINE webhook', () => {
  it('refuses a forged or missing signature with 401: nothing reaches the chat service or the queue', async () => {
    const w = await start({ allow_code: true });
    const event = line.textEvent({ text: '/code fix the parser' });
    expect((await line.deliver(w.url, [event], { forge: 'wrong-secret' })).status).toBe(401);
    expect((await line.deliver(w.url, [event], { forge: 'missing' })).status).toBe(401);
    await w.idle();
    expect(chat.seen).toEqual([]);
    expect((await backends.queue.stats()).depth).toBe(0);
    expect(line.replies).toEqual([]);
  });

  it('hands a message to the chat service with the CHAT route forced, and replies with the answer', async () => {
    const userId = `U${'a'.repeat(32)}`;
    const w = await start({ users: { [userId]: 'alice' }, default_repo: 'acme/widgets' });
    const event = line.textEvent({ text: 'how does the parser work?', userId });
    expect((await line.deliver(w.url, [event])).status).toBe(200);
    await w.idle();
    expect(chat.seen).toHaveLength(1);
    const [message] = chat.seen;
    expect(message?.policy).toEqual({ forceRoute: 'CHAT', allowExplicitCode: false });
    expect(message).toMatchObject({
      platform: 'line',
      channel: userId,
      user: userId,
      access: { login: 'alice', allowedLocal: false },
      repoHints: ['acme/widgets'],
    });
    expect(line.replies.map((r) => r.texts)).toEqual([['(CHAT) you said: how does the parser work?']]);
    expect(line.pushes).toEqual([]);
    // Without allow_code an explicit /code is chat as well.
    await line.deliver(w.url, [line.textEvent({ text: '/code delete everything', userId })]);
    await w.idle();
    expect((await backends.queue.stats()).depth).toBe(0);
  });

  it('makes one job of an event LINE redelivers, and spends its reply token once on the acknowledgement', async () => {
    const w = await start({ allow_code: true });
    const event = line.textEvent({
      text: '@codefleet /code fix the parser',
      groupId: `C${'b'.repeat(32)}`,
      mentions: [{ index: 0, length: 10, isSelf: true }],
    });
    expect((await line.deliver(w.url, [event])).status).toBe(200);
    await w.idle();
    expect((await line.deliver(w.url, [event], { redelivery: true })).status).toBe(200);
    expect((await line.deliver(w.url, [event], { redelivery: true })).status).toBe(200);
    await w.idle();
    expect(chat.seen).toHaveLength(1);
    expect(chat.seen[0]?.channel).toBe(`C${'b'.repeat(32)}`);
    expect((await backends.queue.stats()).depth).toBe(1);
    expect(line.exchanges.filter((e) => e.path === '/v2/bot/message/reply')).toHaveLength(1);
    expect(line.replies[0]?.texts[0]).toMatch(/^Queued as job line-\d+ \(CODE, acme\/widgets\)/);
  });

  it('pushes the answer with a retry key when the reply token expired while it was being worked out', async () => {
    const w = await start();
    const event = line.textEvent({ text: 'hello' });
    line.expireReplyTokens();
    await line.deliver(w.url, [event]);
    await w.idle();
    expect(line.exchanges.map((e) => [e.path, e.status])).toEqual([
      ['/v2/bot/message/reply', 400],
      ['/v2/bot/message/push', 200],
    ]);
    expect(line.pushes[0]?.texts).toEqual(['(CHAT) you said: hello']);
    expect(line.pushes[0]?.retryKey).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("ignores follow, join and non-text events cleanly and answers LINE's empty verification delivery", async () => {
    const w = await start();
    const base = line.textEvent({ text: 'x' });
    const follow = { ...base, type: 'follow', message: undefined };
    const sticker = { ...base, webhookEventId: 'sticker-1', message: { id: '9', type: 'sticker' } };
    expect((await line.deliver(w.url, [follow, sticker])).status).toBe(200);
    expect((await line.deliver(w.url, [])).status).toBe(200);
    await w.idle();
    expect(chat.seen).toEqual([]);
    expect(line.exchanges).toEqual([]);
  });

  it('refuses a body that is too large or not a webhook', async () => {
    const w = await start();
    const big = await fetch(w.url, {
      method: 'POST',
      body: 'x'.repeat(300 * 1024),
      headers: { 'x-line-signature': 'AAAA' },
    });
    expect(big.status).toBe(413);
    const get = await fetch(w.url);
    expect(get.status).toBe(405);
  });
});
