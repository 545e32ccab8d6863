import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A STAND-IN for the LINE Messaging API, for tests only: an HTTP server on 127.0.0.1 (random
 * port) that answers the calls a bot makes, as LINE documents them:
 *
 * - `POST /v2/bot/message/reply` `{replyToken, messages}`: the reply token is single use and
 *   valid for about a minute; a used, expired or unknown one is 400 "Invalid reply token".
 * - `POST /v2/bot/message/push` `{to, messages}` with an optional `X-Line-Retry-Key` (a UUID):
 *   a key already accepted is 409 with the `x-line-accepted-request-id` header and nothing is
 *   sent again; past the monthly quota ({@link LineStandIn.exhaustQuota}) 429 "You have
 *   reached your monthly limit."
 * - `GET /v2/bot/info`: the bot's profile (what `codefleet doctor` asks to check the token).
 *
 * All check `Authorization: Bearer <channel access token>` (401 otherwise); the POSTs take at
 * most 5 messages of `type: 'text'` of at most 5 000 characters (400 otherwise), and answer
 * `{sentMessages: [{id, quoteToken}]}` with an `x-line-request-id` header. The stand-in
 * also plays the LINE platform's side of webhooks: it mints text-message events with fresh
 * reply tokens and POSTs them signed with the channel secret ({@link LineStandIn.deliver}).
 */
export interface LineStandIn {
  /** `http://127.0.0.1:<port>`: the Messaging API base URL (`line.api_url`). */
  readonly url: string;
  readonly accessToken: string;
  readonly channelSecret: string;
  /** Replies accepted, oldest first. */
  readonly replies: LineSent[];
  /** Pushes accepted (a 409 replay is not one), oldest first. */
  readonly pushes: LineSent[];
  /** Every request with the status it got, oldest first. */
  readonly exchanges: LineExchange[];
  /** A text message event as LINE sends it, with a fresh reply token. */
  textEvent(options: TextEventOptions): LineWebhookEvent;
  /** POSTs `events` to `url` as a LINE webhook, signed unless `forge` says otherwise. */
  deliver(url: string, events: LineWebhookEvent[], options?: DeliverOptions): Promise<{ status: number; body: string }>;
  /** Makes every reply token issued so far expired, as a minute passing would. */
  expireReplyTokens(): void;
  /** Pushes from now on get 429 "You have reached your monthly limit." */
  exhaustQuota(): void;
  /** The next `times` requests to `path` get `status` (a 500 for a retry test). */
  failNext(path: string, status: number, times?: number): void;
  close(): Promise<void>;
}

/** A message call the stand-in accepted. */
export interface LineSent {
  /** The push's `to`; the reply token's event source for a reply. */
  to: string;
  texts: string[];
  retryKey?: string;
  requestId: string;
}

/** One request and its answer. */
export interface LineExchange {
  path: string;
  status: number;
  retryKey?: string;
}

/** What {@link LineStandIn.textEvent} builds. */
export interface TextEventOptions {
  text: string;
  userId?: string;
  /** A group chat; the event's source is the group (with the sender's userId). */
  groupId?: string;
  /** A room (a multi-person chat without a group); the event's source is the room. */
  roomId?: string;
  /**
   * Mentions in `text` as LINE marks them (`message.mention.mentionees`): the span in UTF-16
   * code units, and `isSelf` when the mentioned user is the bot that receives the webhook.
   */
  mentions?: { index: number; length: number; isSelf?: boolean; userId?: string }[];
  /** Defaults to a fresh id: redeliveries of one event share it. */
  webhookEventId?: string;
  messageId?: string;
}

/** Options of {@link LineStandIn.deliver}. */
export interface DeliverOptions {
  /** `deliveryContext.isRedelivery` on every event. */
  redelivery?: boolean;
  /** `'missing'`: no signature header; `'wrong-secret'`: signed with another secret. */
  forge?: 'missing' | 'wrong-secret';
}

/** A webhook event, as LINE's JSON has it (the fields codefleet reads, and a few more). */
export interface LineWebhookEvent {
  type: string;
  mode: 'active' | 'standby';
  timestamp: number;
  webhookEventId: string;
  deliveryContext: { isRedelivery: boolean };
  source:
    | { type: 'user'; userId: string }
    | { type: 'group'; groupId: string; userId?: string }
    | { type: 'room'; roomId: string; userId?: string };
  replyToken?: string;
  message?: {
    id: string;
    type: string;
    text?: string;
    quoteToken?: string;
    mention?: {
      mentionees: { index: number; length: number; type: 'user' | 'all'; userId?: string; isSelf?: boolean }[];
    };
  };
}

/** `x-line-signature` of `body`: base64 of HMAC-SHA256 keyed with the channel secret. */
export function signLineBody(channelSecret: string, body: string | Buffer): string {
  return createHmac('sha256', channelSecret).update(body).digest('base64');
}

const replyTokenTtlMs = 60_000;
const maxMessages = 5;
const maxTextChars = 5_000;

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res
    .writeHead(status, { 'content-type': 'application/json', 'x-line-request-id': randomUUID(), ...headers })
    .end(JSON.stringify(body));
};

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
}

/** The texts of a valid `messages` array, or the problem LINE would name. */
function textsOf(messages: unknown): string[] | string {
  if (!Array.isArray(messages) || messages.length === 0)
    return 'The request body has 1 error(s): [messages] must be specified';
  if (messages.length > maxMessages)
    return `The request body has 1 error(s): [messages] Size must be between 1 and ${maxMessages}`;
  const texts: string[] = [];
  for (const [i, message] of messages.entries()) {
    const m = message as { type?: unknown; text?: unknown };
    if (m.type !== 'text' || typeof m.text !== 'string' || m.text === '')
      return `The request body has 1 error(s): [messages[${i}]] must be a text message`;
    if (m.text.length > maxTextChars)
      return `The request body has 1 error(s): [messages[${i}].text] Length must be between 0 and ${maxTextChars}`;
    texts.push(m.text);
  }
  return texts;
}

/** Starts the stand-in; see {@link LineStandIn}. */
export async function startLineStandIn(
  options: { accessToken?: string; channelSecret?: string } = {},
): Promise<LineStandIn> {
  const accessToken = options.accessToken ?? `line-token-${randomBytes(8).toString('hex')}`;
  const channelSecret = options.channelSecret ?? randomBytes(16).toString('hex');
  const replies: LineSent[] = [];
  const pushes: LineSent[] = [];
  const exchanges: LineExchange[] = [];
  // Reply token → where its event came from, when it was issued, whether it was used.
  const tokens = new Map<string, { to: string; issuedAt: number; used: boolean }>();
  const acceptedKeys = new Map<string, string>();
  const faults: { path: string; status: number; times: number }[] = [];
  let clockOffset = 0;
  let quotaExhausted = false;

  const handle = async (req: IncomingMessage, res: ServerResponse, path: string) => {
    const retryKey = typeof req.headers['x-line-retry-key'] === 'string' ? req.headers['x-line-retry-key'] : undefined;
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      exchanges.push({ path, status, ...(retryKey === undefined ? {} : { retryKey }) });
      send(res, status, body, headers);
    };
    const botInfo = req.method === 'GET' && path === '/v2/bot/info';
    if (!botInfo && (req.method !== 'POST' || (path !== '/v2/bot/message/reply' && path !== '/v2/bot/message/push')))
      return answer(404, { message: 'Not found' });
    if (req.headers.authorization !== `Bearer ${accessToken}`) {
      return answer(401, {
        message: 'Authentication failed. Confirm that the access token in the authorization header is valid.',
      });
    }
    // What `codefleet doctor` asks to check the token: the bot's own profile.
    if (botInfo)
      return answer(200, {
        userId: 'U0123456789abcdef0123456789abcdef',
        basicId: '@000stand',
        displayName: 'codefleet stand-in',
        chatMode: 'bot',
        markAsReadMode: 'auto',
      });
    const fault = faults.find((f) => f.path === path && f.times > 0);
    if (fault !== undefined) {
      fault.times -= 1;
      return answer(fault.status, { message: 'An error occurred in the stand-in (injected).' });
    }
    const body = await readJson(req);
    const texts = textsOf(body.messages);
    if (typeof texts === 'string') return answer(400, { message: texts });
    const sentMessages = texts.map(() => ({
      id: String(Date.now()) + randomBytes(2).toString('hex'),
      quoteToken: randomBytes(8).toString('hex'),
    }));
    const requestId = randomUUID();

    if (path === '/v2/bot/message/reply') {
      // LINE refuses a retry key on the reply API.
      if (retryKey !== undefined) return answer(400, { message: 'The retry key is not supported on this API' });
      const token = tokens.get(String(body.replyToken ?? ''));
      if (token === undefined || token.used || Date.now() + clockOffset - token.issuedAt >= replyTokenTtlMs) {
        return answer(400, { message: 'Invalid reply token' });
      }
      token.used = true;
      replies.push({ to: token.to, texts, requestId });
      return answer(200, { sentMessages }, { 'x-line-request-id': requestId });
    }
    if (retryKey !== undefined && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(retryKey)) {
      return answer(400, { message: "The value for the 'X-Line-Retry-Key' header is invalid" });
    }
    if (retryKey !== undefined && acceptedKeys.has(retryKey)) {
      return answer(
        409,
        { message: 'The retry key is already accepted', sentMessages },
        { 'x-line-accepted-request-id': acceptedKeys.get(retryKey) ?? '' },
      );
    }
    if (quotaExhausted) return answer(429, { message: 'You have reached your monthly limit.' });
    const to = String(body.to ?? '');
    if (!/^[UCR][0-9a-f]{32}$/.test(to))
      return answer(400, { message: "The property, 'to', in the request body is invalid (line: -, column: -)" });
    if (retryKey !== undefined) acceptedKeys.set(retryKey, requestId);
    pushes.push({ to, texts, requestId, ...(retryKey === undefined ? {} : { retryKey }) });
    return answer(200, { sentMessages }, { 'x-line-request-id': requestId });
  };

  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    handle(req, res, path).catch((error: unknown) => {
      if (!res.headersSent)
        send(res, 400, { message: `stand-in: ${error instanceof Error ? error.message : String(error)}` });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    accessToken,
    channelSecret,
    replies,
    pushes,
    exchanges,
    textEvent(event) {
      const userId = event.userId ?? `U${randomBytes(16).toString('hex')}`;
      const replyToken = randomBytes(16).toString('hex');
      const source: LineWebhookEvent['source'] =
        event.groupId !== undefined
          ? { type: 'group', groupId: event.groupId, userId }
          : event.roomId !== undefined
            ? { type: 'room', roomId: event.roomId, userId }
            : { type: 'user', userId };
      tokens.set(replyToken, {
        to: event.groupId ?? event.roomId ?? userId,
        issuedAt: Date.now() + clockOffset,
        used: false,
      });
      const mentionees = (event.mentions ?? []).map((m) => ({
        index: m.index,
        length: m.length,
        type: 'user' as const,
        userId: m.userId ?? `U${randomBytes(16).toString('hex')}`,
        ...(m.isSelf === undefined ? {} : { isSelf: m.isSelf }),
      }));
      return {
        type: 'message',
        mode: 'active',
        timestamp: Date.now(),
        webhookEventId: event.webhookEventId ?? `01${randomBytes(12).toString('hex').toUpperCase()}`,
        deliveryContext: { isRedelivery: false },
        source,
        replyToken,
        message: {
          id: event.messageId ?? String(100_000_000 + Math.floor(Math.random() * 1e9)),
          type: 'text',
          text: event.text,
          quoteToken: randomBytes(8).toString('hex'),
          ...(mentionees.length === 0 ? {} : { mention: { mentionees } }),
        },
      };
    },
    async deliver(url, events, deliverOptions = {}) {
      const payload = {
        destination: `U${'0'.repeat(32)}`,
        events: events.map((e) => ({ ...e, deliveryContext: { isRedelivery: deliverOptions.redelivery === true } })),
      };
      const body = JSON.stringify(payload);
      const headers: Record<string, string> = {
        'content-type': 'application/json; charset=utf-8',
        'user-agent': 'LineBotWebhook/2.0',
      };
      if (deliverOptions.forge !== 'missing') {
        headers['x-line-signature'] = signLineBody(
          deliverOptions.forge === 'wrong-secret' ? `${channelSecret}-not` : channelSecret,
          body,
        );
      }
      const response = await fetch(url, { method: 'POST', headers, body });
      return { status: response.status, body: await response.text() };
    },
    expireReplyTokens: () => {
      clockOffset += replyTokenTtlMs;
    },
    exhaustQuota: () => {
      quotaExhausted = true;
    },
    failNext: (path, status, times = 1) => void faults.push({ path, status, times }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
