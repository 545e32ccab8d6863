import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createInbox, type ChatMessage, type ChatService } from '@codefleet/chat';
import type { LineConfig } from '@codefleet/config';
import { classify, CodefleetError, readBounded } from '@codefleet/core';
import { maskForPublishing, type Logger, type SecretSource } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import type { RunStore } from '@codefleet/store';
import { createLineClient, retryKeyOf, type LineClient } from './client.js';
import { addressed, eventsOf, lineRecordOf, readEvent, type LineTextMessage } from './events.js';
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
  store: Pick<RunStore, 'bindRequest' | 'setRequest'>;
  /**
   * Where events are recorded before LINE gets its 200: a queue of their own
   * (`<queue.name>-line-inbox`), never the jobs' queue. The webhook also processes it.
   */
  inbox: Queue;
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
  /** Resolves when the events recorded so far have been handled (tests). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Receives LINE webhooks. The `x-line-signature` is checked on the raw body before anything
 * is parsed: missing or forged is 401 and nothing happens. Each text message addressed to
 * the bot (any in a one-to-one chat; in a group or room one that mentions the bot or starts
 * with `line.group_prefix`) is **recorded in the inbox, keyed by its `webhookEventId`,
 * before the 200**: LINE does not send an event again once it had its 200, so a process
 * killed afterwards finds the record at its next start; when the record cannot be written
 * the answer is 500 and LINE redelivers (`deliveryContext.isRedelivery`). Events are handled
 * from the record: bound by their id, so a redelivery never reaches the chat service twice;
 * then the chat service decides (LINE forces the CHAT route; explicit `/code` only with
 * `line.allow_code`) and the outcome is the reply, spending the reply token once. A reply
 * token that expired meanwhile falls back to a push with a retry key.
 */
export function createLineWebhook(options: LineWebhookOptions): LineWebhook {
  const { config, chat, store, log } = options;
  const secret = config.channel_secret;
  const token = config.channel_access_token;
  if (secret === undefined || secret === '' || token === undefined || token === '') {
    throw new CodefleetError(
      'invalid_config',
      `LINE needs the channel secret and access token (${config.channel_secret_env}, ${config.channel_access_token_env})`,
      { verdict: 'permanent' },
    );
  }
  const client = options.client ?? createLineClient({ apiUrl: config.api_url, accessToken: token });
  const mask = (text: string) => maskForPublishing(text, options.secrets);
  let server: Server | undefined;
  let url = '';

  const answer = async (message: LineTextMessage, text: string) => {
    if (message.replyToken !== undefined) {
      try {
        await client.reply(message.replyToken, [mask(text)]);
        return;
      } catch (error) {
        if (classify(error).code !== 'forge_rejected') throw error;
        log.info(
          { event: 'line.reply_token_refused', webhook_event_id: message.webhookEventId },
          'reply token refused (expired or used); pushing instead',
        );
      }
    }
    await client.push(message.to, [mask(text)], retryKeyOf('line-event', message.webhookEventId));
  };

  // Runs again on the same record after a crash (`attempt` > 1): then a claim that is not
  // `done` is finished (the chat service makes one job of a message however often asked).
  const handleMessage = async (message: LineTextMessage, attempt: number) => {
    const elog = log.child({ webhook_event_id: message.webhookEventId, line_to: message.to });
    const key = `line:event:${message.webhookEventId}`;
    const bound = await store.bindRequest(key, message.messageId, lineEventTtlMs);
    if (!bound.bound && (bound.value === 'done' || attempt === 1)) {
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
      elog.info(
        { event: 'line.handled', outcome: outcome.kind, route: outcome.route },
        `LINE message: ${outcome.kind}`,
      );
      text = outcomeText(outcome);
    } catch (error) {
      const c = classify(error);
      elog.error({ err: error, event: 'line.chat_failed', code: c.code }, 'the chat service failed on a LINE message');
      text = `Sorry, that could not be handled (${c.code}). Please try again later.`;
    }
    await answer(message, text);
    await store.setRequest(key, 'done', lineEventTtlMs);
  };

  const inbox = createInbox({
    queue: options.inbox,
    platform: 'line',
    log,
    handle: async (entry, attempt) => {
      const message = lineRecordOf(entry.event);
      if (message === undefined)
        throw new CodefleetError('invalid_job', `inbox record ${entry.key} is not a LINE message this webhook reads`, {
          verdict: 'permanent',
        });
      await handleMessage(message, attempt);
    },
  });
  const processing = new AbortController();
  let running: Promise<void> | undefined;

  /** Records each text message addressed to the bot; throws when one cannot be recorded (nothing is answered then). */
  const recordEvents = async (events: unknown[]) => {
    for (const raw of events) {
      const reading = readEvent(raw);
      const message = reading.kind === 'text' ? addressed(reading.message, config.group_prefix) : undefined;
      if (message === undefined) {
        const reason =
          reading.kind === 'ignore' ? reading.reason : `a ${reading.message.chat} message not addressed to the bot`;
        log.debug(
          { event: 'line.ignored', type: reading.kind === 'ignore' ? reading.type : 'message', reason },
          'LINE event ignored',
        );
        continue;
      }
      await inbox.record(message.webhookEventId, message);
    }
  };

  const receive = async (req: IncomingMessage, res: ServerResponse) => {
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      if (status >= 400)
        log.warn({ event: 'line.refused', status, reason: (body as { error?: string }).error }, 'LINE webhook refused');
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    };
    if (req.method !== 'POST') return reply(405, { error: 'POST only' });
    // Unread bytes would be taken for the next request on a keep-alive connection: close it.
    if (Number(req.headers['content-length'] ?? 0) > lineMaxBodyBytes)
      return reply(413, { error: 'payload too large' }, { connection: 'close' });
    const raw = await readBounded(req, lineMaxBodyBytes);
    if (raw === undefined) return reply(413, { error: 'payload too large' }, { connection: 'close' });
    const signature = req.headers['x-line-signature'];
    if (!verifyLineSignature(secret, raw, typeof signature === 'string' ? signature : undefined))
      return reply(401, { error: 'bad signature' });
    let events: unknown[];
    try {
      events = eventsOf(JSON.parse(raw.toString('utf8')));
    } catch (error) {
      return reply(400, { error: error instanceof Error ? error.message : 'not JSON' });
    }
    try {
      await recordEvents(events);
    } catch (error) {
      const c = classify(error);
      log.error(
        { err: error, event: 'line.record_failed', code: c.code },
        'could not record a LINE event; answered 500 so LINE delivers it again',
      );
      return reply(500, { error: c.code });
    }
    reply(200, {});
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    // Mounted in another server without listen(): the records are processed all the same.
    running ??= inbox.run(processing.signal);
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
      running ??= inbox.run(processing.signal);
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
      // Idle once no record waits or is being handled (one waiting for a retry is not waited for).
      for (;;) {
        const stats = await options.inbox.stats();
        if (stats.ready + stats.inFlight === 0) return;
        await sleep(20);
      }
    },
    async close() {
      const s = server;
      if (s !== undefined) {
        await new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeAllConnections();
        });
      }
      // The record being handled finishes; what waits stays recorded for the next start.
      processing.abort();
      await running;
    },
  };
}
