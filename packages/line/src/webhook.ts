import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatMessage, ChatService } from '@codefleet/chat';
import type { LineConfig } from '@codefleet/config';
import { classify, CodefleetError, readBounded } from '@codefleet/core';
import { maskForPublishing, type Logger, type SecretSource } from '@codefleet/log';
import type { RunStore } from '@codefleet/store';
import { createLineClient, retryKeyOf, type LineClient } from './client.js';
import { eventsOf, readEvent, type LineTextMessage } from './events.js';
import { verifyLineSignature } from './signature.js';
import { outcomeText } from './texts.js';

/** How long a webhook event id is remembered: LINE redelivers for a shorter time than this. */
export const lineEventTtlMs = 7 * 24 * 60 * 60 * 1000;
/** Largest accepted webhook body; LINE's deliveries are a few kilobytes. */
export const lineMaxBodyBytes = 256 * 1024;

/** Dependencies of {@link createLineWebhook}. */
export interface LineWebhookOptions {
  /** `line:`; `channel_secret` and `channel_access_token` must be set. */
  config: LineConfig;
  chat: ChatService;
  /** Where event ids are bound, so a redelivered event is handled once across processes. */
  store: Pick<RunStore, 'bindRequest'>;
  log: Logger;
  /** Defaults to a client over `config.api_url` with the access token. */
  client?: LineClient;
  secrets?: SecretSource;
}

/** The LINE webhook: a request handler, and a server of its own around it. */
export interface LineWebhook {
  /** Handles one request; mount it in another server at the webhook path. */
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** Listens on `config.host`:`config.port` (0: a free port). */
  listen(): Promise<void>;
  /** `http://host:port` once listening. */
  readonly url: string;
  /** Resolves when the events accepted so far have been handled (tests, graceful shutdown). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Receives LINE webhooks. The `x-line-signature` is checked on the raw body before anything
 * is parsed: missing or forged is 401 and nothing happens. A signed delivery is answered 200
 * at once and its events handled afterwards, since LINE waits only briefly and redelivers a
 * webhook it thinks failed (`deliveryContext.isRedelivery`). Each text message is bound by
 * its `webhookEventId` first, so a redelivery never reaches the chat service twice; then the
 * chat service decides (LINE forces the CHAT route; explicit `/code` only with
 * `line.allow_code`) and the outcome is the reply, spending the reply token once. A reply
 * token that expired while a local model was thinking falls back to a push with a retry key.
 */
export function createLineWebhook(options: LineWebhookOptions): LineWebhook {
  const { config, chat, store, log } = options;
  const secret = config.channel_secret;
  const token = config.channel_access_token;
  if (secret === undefined || secret === '' || token === undefined || token === '') {
    throw new CodefleetError('invalid_config', `LINE needs the channel secret and access token (${config.channel_secret_env}, ${config.channel_access_token_env})`, { verdict: 'permanent' });
  }
  const client = options.client ?? createLineClient({ apiUrl: config.api_url, accessToken: token });
  const mask = (text: string) => maskForPublishing(text, options.secrets);
  const inFlight = new Set<Promise<void>>();
  let server: Server | undefined;
  let url = '';

  const answer = async (message: LineTextMessage, text: string) => {
    if (message.replyToken !== undefined) {
      try {
        await client.reply(message.replyToken, [mask(text)]);
        return;
      } catch (error) {
        if (classify(error).code !== 'forge_rejected') throw error;
        log.info({ event: 'line.reply_token_refused', webhook_event_id: message.webhookEventId }, 'reply token refused (expired or used); pushing instead');
      }
    }
    await client.push(message.to, [mask(text)], retryKeyOf('line-event', message.webhookEventId));
  };

  const handleMessage = async (message: LineTextMessage) => {
    const elog = log.child({ webhook_event_id: message.webhookEventId, line_to: message.to });
    const bound = await store.bindRequest(`line:event:${message.webhookEventId}`, message.messageId, lineEventTtlMs);
    if (!bound.bound) {
      elog.info({ event: 'line.duplicate', redelivery: message.isRedelivery }, 'LINE event already handled');
      return;
    }
    const user = message.userId;
    const chatMessage: ChatMessage = {
      platform: 'line',
      channel: message.to,
      // LINE has no threads: each message starts its own conversation.
      thread: message.messageId,
      messageId: message.messageId,
      user: user ?? 'unknown',
      text: message.text,
      access: {
        ...(user !== undefined && config.users[user] !== undefined ? { login: config.users[user] } : {}),
        allowedLocal: user !== undefined && config.allowed_users.includes(user),
      },
      repoHints: config.default_repo === undefined ? [] : [config.default_repo],
      policy: { forceRoute: 'CHAT', allowExplicitCode: config.allow_code },
    };
    let text: string;
    try {
      const outcome = await chat.handle(chatMessage);
      elog.info({ event: 'line.handled', outcome: outcome.kind, route: outcome.route }, `LINE message: ${outcome.kind}`);
      text = outcomeText(outcome);
    } catch (error) {
      const c = classify(error);
      elog.error({ err: error, event: 'line.chat_failed', code: c.code }, 'the chat service failed on a LINE message');
      text = `Sorry, that could not be handled (${c.code}). Please try again later.`;
    }
    await answer(message, text);
  };

  const handleEvents = async (events: unknown[]) => {
    for (const raw of events) {
      const reading = readEvent(raw);
      if (reading.kind === 'ignore') {
        log.debug({ event: 'line.ignored', type: reading.type, reason: reading.reason }, 'LINE event ignored');
        continue;
      }
      try {
        await handleMessage(reading.message);
      } catch (error) {
        log.error({ err: error, event: 'line.failed', webhook_event_id: reading.message.webhookEventId }, 'could not handle a LINE message');
      }
    }
  };

  const receive = async (req: IncomingMessage, res: ServerResponse) => {
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      if (status >= 400) log.warn({ event: 'line.refused', status, reason: (body as { error?: string }).error }, 'LINE webhook refused');
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    };
    if (req.method !== 'POST') return reply(405, { error: 'POST only' });
    // Unread bytes would be taken for the next request on a keep-alive connection: close it.
    if (Number(req.headers['content-length'] ?? 0) > lineMaxBodyBytes) return reply(413, { error: 'payload too large' }, { connection: 'close' });
    const raw = await readBounded(req, lineMaxBodyBytes);
    if (raw === undefined) return reply(413, { error: 'payload too large' }, { connection: 'close' });
    const signature = req.headers['x-line-signature'];
    if (!verifyLineSignature(secret, raw, typeof signature === 'string' ? signature : undefined)) return reply(401, { error: 'bad signature' });
    let events: unknown[];
    try {
      events = eventsOf(JSON.parse(raw.toString('utf8')));
    } catch (error) {
      return reply(400, { error: error instanceof Error ? error.message : 'not JSON' });
    }
    reply(200, {});
    const work = handleEvents(events).finally(() => inFlight.delete(work));
    inFlight.add(work);
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    receive(req, res).catch((error: unknown) => {
      log.error({ err: error, event: 'line.webhook_failed' }, 'LINE webhook handler failed');
      if (!res.headersSent) res.writeHead(500, { connection: 'close' }).end();
    });
  };

  return {
    handle,
    get url() {
      return url;
    },
    async listen() {
      const s = createServer(handle);
      server = s;
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(config.port, config.host, () => resolve());
      });
      const { port } = s.address() as AddressInfo;
      url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    },
    async idle() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
    async close() {
      const s = server;
      if (s !== undefined) {
        await new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeAllConnections();
        });
      }
      await this.idle();
    },
  };
}
