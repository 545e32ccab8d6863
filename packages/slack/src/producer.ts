import type { AddressInfo } from 'node:net';
import type { ChatMessage, ChatOutcome, ChatService } from '@codefleet/chat';
import type { SlackConfig } from '@codefleet/config';
import { CodefleetError } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { RunStore } from '@codefleet/store';
import { App, SocketModeReceiver, type HTTPReceiver } from '@slack/bolt';
import type { WebClientOptions } from '@slack/web-api';
import { boltLogger } from './bolt-logger.js';
import { createConversation, repoActionPrefix, type IncomingRequest } from './conversation.js';

/** Options of {@link createSlackProducer}. */
export interface SlackProducerOptions {
  config: SlackConfig;
  chat: ChatService;
  store: Pick<RunStore, 'bindRequest' | 'setRequest' | 'lookupRequest'>;
  log: Logger;
  /** Extra Web API client options (the SDK's retry policy, an HTTP agent). */
  clientOptions?: WebClientOptions;
  /**
   * Keeps a follow-up the chat service deferred (the thread's job is still queued or running):
   * the follow-up processor's `defer`. Its later outcome comes back through {@link SlackProducer.tell}.
   * Without it such a message is told to wait and send it again.
   */
  defer?: (message: ChatMessage, deferred: Extract<ChatOutcome, { kind: 'deferred' }>) => Promise<void>;
}

/** A running Slack producer. */
export interface SlackProducer {
  /** Connects (Socket Mode) or listens (HTTP); resolves the events URL in HTTP mode. */
  start(): Promise<{ eventsUrl?: string }>;
  /** Disconnects or stops listening, then waits for requests already acknowledged. */
  stop(): Promise<void>;
  /** Resolves once every acknowledged request has been handled (for tests and shutdown). */
  idle(): Promise<void>;
  /** Edits the status message of a message handled later (a kept follow-up) to say what became of it. */
  tell(message: ChatMessage, outcome: ChatOutcome): Promise<void>;
}

/** The event fields the producer reads (Bolt's own types are a wide union). */
interface MessageEvent {
  type: string;
  subtype?: string;
  bot_id?: string;
  user?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  channel: string;
  channel_type?: string;
}

/**
 * The Slack producer: a Bolt app on Socket Mode (the default: no public URL, fits hosts
 * behind NAT) or the Events API over HTTP (`slack.mode: http`, signatures verified by Bolt
 * with the signing secret and its 5-minute replay window). Every delivery is acknowledged at
 * once (Bolt acks events before listeners run) and the work happens after the ack, so a slow
 * chat service never makes Slack retry; retries that come anyway stop at the message claim.
 */
export function createSlackProducer(options: SlackProducerOptions): SlackProducer {
  const { config, log } = options;
  const need = (value: string | undefined, env: string) => {
    if (value === undefined || value === '') throw new CodefleetError('invalid_config', `slack: ${env} is not set`, { verdict: 'permanent' });
    return value;
  };
  const socketMode = config.mode === 'socket';
  const logger = boltLogger(log);
  const clientOptions = (): WebClientOptions => ({ slackApiUrl: config.api_url, ...options.clientOptions });
  // Our own Socket Mode receiver (a documented Bolt option) for two reasons: its
  // `installerOptions.clientOptions` carry `slack.api_url` to the client that calls
  // apps.connections.open, and `stop()` can wait for the close handshake, which Bolt's
  // `App.stop()` does not (it resolves before the socket is closed).
  const receiver = socketMode
    ? new SocketModeReceiver({ appToken: need(config.app_token, config.app_token_env), logger, installerOptions: { clientOptions: clientOptions() } })
    : undefined;
  const app = new App({
    token: need(config.bot_token, config.bot_token_env),
    ...(receiver !== undefined ? { receiver } : { signingSecret: need(config.signing_secret, config.signing_secret_env) }),
    clientOptions: clientOptions(),
    logger,
    processBeforeResponse: false,
  });
  const conversation = createConversation({ config, chat: options.chat, store: options.store, client: app.client, log, ...(options.defer === undefined ? {} : { defer: options.defer }) });
  const inFlight = new Set<Promise<void>>();
  const detach = (work: () => Promise<void>) => {
    const running = work().catch((error: unknown) => log.error({ event: 'slack.request_failed', err: error }, 'a Slack request failed after its ack'));
    inFlight.add(running);
    void running.finally(() => inFlight.delete(running));
  };

  const take = (event: MessageEvent, botUserId: string | undefined) => {
    if (event.subtype !== undefined || event.bot_id !== undefined || event.user === undefined || event.user === botUserId) return;
    const mention = botUserId === undefined ? /<@[A-Z0-9]+(\|[^>]*)?>/ : new RegExp(`<@${botUserId}(\\|[^>]*)?>`, 'g');
    const request: IncomingRequest = {
      channel: event.channel, ts: event.ts, user: event.user, text: (event.text ?? '').replace(mention, ' ').replace(/\s+/g, ' ').trim(),
      ...(event.thread_ts === undefined ? {} : { thread_ts: event.thread_ts }),
    };
    detach(() => conversation.request(request));
  };

  app.event('app_mention', async ({ event, context }) => take(event as unknown as MessageEvent, context.botUserId));
  app.event('message', async ({ event, context }) => {
    const message = event as unknown as MessageEvent;
    // Channel messages arrive as app_mention; only direct messages start work here.
    if (message.channel_type === 'im') take(message, context.botUserId);
  });
  app.action(new RegExp(`^${repoActionPrefix}\\d+$`), async ({ ack, body, action }) => {
    await ack();
    const payload = body as { container?: { channel_id?: string; message_ts?: string }; user: { id: string } };
    const value = (action as { value?: string }).value;
    const channel = payload.container?.channel_id;
    const statusTs = payload.container?.message_ts;
    if (value === undefined || channel === undefined || statusTs === undefined) return;
    detach(() => conversation.chooseRepo({ channel, statusTs, user: payload.user.id, choice: value }));
  });
  app.error(async (error) => { log.error({ event: 'slack.app_error', err: error }, 'Slack app error'); });

  const idle = async () => {
    while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
  };

  return {
    async start() {
      if (socketMode) {
        await app.start();
        log.info({ event: 'slack.started', mode: 'socket' }, 'Slack producer connected');
        return {};
      }
      const server = (await (app.start as unknown as HTTPReceiver['start'])({ port: config.port, host: config.host })) as { address(): AddressInfo | string | null };
      const address = server.address() as AddressInfo;
      const eventsUrl = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${address.port}/slack/events`;
      log.info({ event: 'slack.started', mode: 'http', url: eventsUrl }, 'Slack producer listening');
      return { eventsUrl };
    },
    async stop() {
      if (receiver !== undefined) await receiver.client.disconnect();
      else await app.stop();
      await idle();
    },
    idle,
    tell: conversation.tell,
  };
}
