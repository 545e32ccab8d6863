import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signLineBody, startLineStandIn, type LineStandIn } from '../src/index.js';

let line: LineStandIn;
beforeEach(async () => {
  line = await startLineStandIn();
});
afterEach(async () => {
  await line.close();
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${line.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${line.accessToken}`, ...headers },
    body: JSON.stringify(body),
  });
const text = (t: string) => [{ type: 'text', text: t }];

describe('LINE stand-in', () => {
  it('refuses a wrong access token with 401', async () => {
    expect(
      (
        await post(
          '/v2/bot/message/push',
          { to: `U${'1'.repeat(32)}`, messages: text('x') },
          { authorization: 'Bearer nope' },
        )
      ).status,
    ).toBe(401);
    expect(line.pushes).toEqual([]);
  });

  it('takes a reply token once, and not after it expired', async () => {
    const event = line.textEvent({ text: 'hi' });
    expect((await post('/v2/bot/message/reply', { replyToken: event.replyToken, messages: text('a') })).status).toBe(
      200,
    );
    const again = await post('/v2/bot/message/reply', { replyToken: event.replyToken, messages: text('b') });
    expect([again.status, await again.json()]).toEqual([400, { message: 'Invalid reply token' }]);
    const late = line.textEvent({ text: 'hi' });
    line.expireReplyTokens();
    expect((await post('/v2/bot/message/reply', { replyToken: late.replyToken, messages: text('c') })).status).toBe(
      400,
    );
    expect(line.replies.map((r) => r.texts)).toEqual([['a']]);
  });

  it('answers a repeated retry key with 409 and the accepted request id, sending nothing again', async () => {
    const key = '123e4567-e89b-12d3-a456-426614174000';
    const to = `U${'2'.repeat(32)}`;
    const first = await post('/v2/bot/message/push', { to, messages: text('x') }, { 'x-line-retry-key': key });
    const second = await post('/v2/bot/message/push', { to, messages: text('x') }, { 'x-line-retry-key': key });
    expect([first.status, second.status]).toEqual([200, 409]);
    expect(second.headers.get('x-line-accepted-request-id')).toBe(first.headers.get('x-line-request-id'));
    expect(line.pushes).toHaveLength(1);
  });

  it('refuses pushes past the monthly limit with 429, and text over 5000 characters with 400', async () => {
    const to = `U${'3'.repeat(32)}`;
    expect((await post('/v2/bot/message/push', { to, messages: text('x'.repeat(5001)) })).status).toBe(400);
    line.exhaustQuota();
    const limited = await post('/v2/bot/message/push', { to, messages: text('x') });
    expect([limited.status, await limited.json()]).toEqual([429, { message: 'You have reached your monthly limit.' }]);
  });

  it('delivers webhooks signed with the channel secret, or forged when told', async () => {
    const got: { signature?: string; body: string }[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push({
          body: Buffer.concat(chunks).toString('utf8'),
          ...(typeof req.headers['x-line-signature'] === 'string'
            ? { signature: req.headers['x-line-signature'] }
            : {}),
        });
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const event = line.textEvent({ text: 'hi' });
      await line.deliver(url, [event]);
      await line.deliver(url, [event], { redelivery: true, forge: 'wrong-secret' });
      await line.deliver(url, [event], { forge: 'missing' });
      expect(got[0]?.signature).toBe(signLineBody(line.channelSecret, got[0]?.body ?? ''));
      expect(got[1]?.signature).not.toBe(signLineBody(line.channelSecret, got[1]?.body ?? ''));
      expect(
        (JSON.parse(got[1]?.body ?? '{}') as { events: { deliveryContext: unknown }[] }).events[0]?.deliveryContext,
      ).toEqual({ isRedelivery: true });
      expect(got[2]?.signature).toBeUndefined();
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
