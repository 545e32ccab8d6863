import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { WebSocket } from 'ws';
import { signSlackRequest, startSlackStandIn, waitFor, type SlackStandIn } from '../src/index.js';

// The Slack STAND-IN's own behaviour, checked with plain fetch and a plain WebSocket
// (the Bolt app's use of it is tested in @codefleet/slack).
let slack: SlackStandIn | undefined;
afterEach(async () => {
  await slack?.close();
  slack = undefined;
});

async function api(s: SlackStandIn, method: string, token: string | undefined, args: Record<string, unknown> = {}) {
  const response = await fetch(`${s.apiUrl}${method}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: new URLSearchParams(
      Object.entries(args).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
    ).toString(),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: (await response.json()) as Record<string, unknown>,
  };
}

describe('Slack stand-in: Web API', () => {
  it("answers with Slack's ok:false errors for tokens, channels, lengths and reactions", async () => {
    const s = (slack = await startSlackStandIn());
    expect((await api(s, 'auth.test', undefined)).body).toEqual({ ok: false, error: 'not_authed' });
    expect((await api(s, 'auth.test', 'xoxb-wrong')).body).toEqual({ ok: false, error: 'invalid_auth' });
    expect((await api(s, 'auth.test', s.botToken)).body).toMatchObject({
      ok: true,
      user_id: s.botUserId,
      bot_id: s.botId,
    });
    expect((await api(s, 'apps.connections.open', s.botToken)).body).toEqual({
      ok: false,
      error: 'not_allowed_token_type',
    });
    expect((await api(s, 'chat.postMessage', s.botToken, { channel: 'nope', text: 'hi' })).body).toEqual({
      ok: false,
      error: 'channel_not_found',
    });
    expect((await api(s, 'chat.postMessage', s.botToken, { channel: 'C0A', text: 'x'.repeat(40_001) })).body).toEqual({
      ok: false,
      error: 'msg_too_long',
    });
    const root = s.mention({ channel: 'C0A', user: 'U0A', text: 'hello' });
    const posted = await api(s, 'chat.postMessage', s.botToken, { channel: 'C0A', text: 'status', thread_ts: root.ts });
    const ts = String(posted.body.ts);
    expect(
      (await api(s, 'chat.update', s.botToken, { channel: 'C0A', ts, text: 'status, edited' })).body,
    ).toMatchObject({ ok: true, ts });
    expect((await api(s, 'chat.update', s.botToken, { channel: 'C0A', ts: root.ts, text: 'not mine' })).body).toEqual({
      ok: false,
      error: 'cant_update_message',
    });
    const reaction = { channel: 'C0A', timestamp: root.ts, name: 'eyes' };
    expect((await api(s, 'reactions.add', s.botToken, reaction)).body).toEqual({ ok: true });
    expect((await api(s, 'reactions.add', s.botToken, reaction)).body).toEqual({ ok: false, error: 'already_reacted' });
    expect((await api(s, 'reactions.remove', s.botToken, reaction)).body).toEqual({ ok: true });
    expect((await api(s, 'reactions.remove', s.botToken, reaction)).body).toEqual({ ok: false, error: 'no_reaction' });
    expect(s.thread('C0A', root.ts).map((m) => [m.text, m.edits])).toEqual([
      ['hello', []],
      ['status, edited', ['status']],
    ]);
    s.fail('chat.update', { status: 429, retryAfter: 3 });
    expect(await api(s, 'chat.update', s.botToken, { channel: 'C0A', ts, text: 'x' })).toMatchObject({
      status: 429,
      retryAfter: '3',
      body: { ok: false, error: 'ratelimited' },
    });
  });
});

describe('Slack stand-in: Socket Mode', () => {
  it('says hello, and redelivers an unacknowledged event with retry_attempt and retry_reason', async () => {
    const s = (slack = await startSlackStandIn());
    const opened = await api(s, 'apps.connections.open', s.appToken);
    const ws = new WebSocket(String(opened.body.url));
    const received: { type: string; envelope_id?: string; retry_attempt?: number; retry_reason?: string }[] = [];
    ws.on('message', (data) => received.push(JSON.parse(String(data)) as (typeof received)[number]));
    await waitFor(() => received[0]?.type === 'hello', { what: 'hello' });
    const { body } = s.mention({ channel: 'C0A', user: 'U0A', text: 'hi' });
    // The client never acks: Slack retries three times, then gives up.
    const envelopes = await s.socket.deliverEvent(body, { ackTimeoutMs: 100 });
    expect(envelopes.map((e) => [e.retry_attempt, e.acked])).toEqual([
      [0, false],
      [1, false],
      [2, false],
      [3, false],
    ]);
    await waitFor(() => received.length === 5, { what: 'four envelopes' });
    expect(received.slice(1).map((e) => [e.type, e.retry_attempt, e.retry_reason])).toEqual([
      ['events_api', 0, ''],
      ['events_api', 1, 'timeout'],
      ['events_api', 2, 'timeout'],
      ['events_api', 3, 'timeout'],
    ]);
    // An acked delivery is sent once.
    ws.removeAllListeners('message');
    ws.on('message', (data) => {
      const envelope = JSON.parse(String(data)) as { envelope_id?: string };
      if (envelope.envelope_id !== undefined) ws.send(JSON.stringify({ envelope_id: envelope.envelope_id }));
    });
    expect((await s.socket.deliverEvent(body)).map((e) => e.acked)).toEqual([true]);
    // A connection URL is single use.
    const again = new WebSocket(String(opened.body.url));
    const refused = await new Promise<string>((resolve) => {
      again.on('error', (e) => resolve(e.message));
      again.on('open', () => resolve('open'));
    });
    expect(refused).toMatch(/401/);
    ws.close();
  });

  it('posts Events API deliveries signed with the v0 scheme, with the retry headers', async () => {
    const s = (slack = await startSlackStandIn());
    const seen: { headers: Record<string, unknown>; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      req.on('end', () => {
        seen.push({ headers: req.headers, body });
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
      const { body } = s.mention({ channel: 'C0A', user: 'U0A', text: 'hi' });
      await s.postEvent(endpoint, body, { retryNum: 2, retryReason: 'http_timeout', timestamp: 1_790_000_000 });
      await s.postEvent(endpoint, body, { forge: 'guessed' });
      const [retried, forged] = seen;
      const expected = `v0=${createHmac('sha256', s.signingSecret).update(`v0:1790000000:${retried!.body}`).digest('hex')}`;
      expect(retried!.headers).toMatchObject({
        'x-slack-signature': expected,
        'x-slack-request-timestamp': '1790000000',
        'x-slack-retry-num': '2',
        'x-slack-retry-reason': 'http_timeout',
      });
      expect(JSON.parse(retried!.body)).toMatchObject({
        type: 'event_callback',
        event: { type: 'app_mention', text: 'hi' },
      });
      expect(forged!.headers['x-slack-retry-num']).toBeUndefined();
      const honest = signSlackRequest(
        s.signingSecret,
        Number(forged!.headers['x-slack-request-timestamp']),
        forged!.body,
      );
      expect(forged!.headers['x-slack-signature']).not.toBe(honest);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
