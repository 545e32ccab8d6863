import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { blockActions, eventCallback, signSlackRequest } from './events.js';
import { SocketModeHub, type SentEnvelope, type SocketDeliveryOptions } from './socket-mode.js';
import { SlackState, type SlackStandInMessage } from './state.js';
import { serveWebApi, type SlackApiCall, type SlackFault, type WebApiContext } from './web-api.js';

/**
 * A STAND-IN for Slack, for tests only: one HTTP server on 127.0.0.1 (random port) that
 * speaks Slack's wire protocol to the real `@slack/bolt` / `@slack/web-api` clients:
 * - the Web API at `<url>/api/` (`auth.test`, `chat.postMessage`, `chat.update`,
 *   `reactions.add` / `reactions.remove`, `apps.connections.open`), with Slack's `ok:false`
 *   errors (`invalid_auth`, `channel_not_found`, `msg_too_long`, `already_reacted`,
 *   `no_reaction`, …) and scripted 429s with `Retry-After`;
 * - Socket Mode over WebSocket at the URL `apps.connections.open` returns (app token
 *   only): `hello`, `events_api` / `interactive` envelopes, acks, redelivery with
 *   `retry_attempt` / `retry_reason` when no ack arrives, `disconnect`;
 * - Events API deliveries over HTTP, signed with the v0 scheme (or forged), with
 *   `X-Slack-Retry-Num` / `X-Slack-Retry-Reason` on retries.
 * It records every message with its edits and reactions, so tests read a thread as a user
 * would see it. Point the app at it with `clientOptions.slackApiUrl = standIn.apiUrl`.
 */
export interface SlackStandIn {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `http://127.0.0.1:<port>/api/`: the Web API base (`slackApiUrl`). */
  readonly apiUrl: string;
  readonly botToken: string;
  readonly appToken: string;
  readonly signingSecret: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly teamId: string;
  readonly appId: string;
  /** A user's @-mention of the bot in `channel` (a thread reply with `thread_ts`): recorded, and its `event_callback` body. */
  mention(input: { channel: string; user: string; text: string; thread_ts?: string }): {
    ts: string;
    body: Record<string, unknown>;
  };
  /** A direct message to the bot (`channel` a `D…` id): recorded, and its `message` (channel_type im) body. */
  directMessage(input: { channel: string; user: string; text: string; thread_ts?: string }): {
    ts: string;
    body: Record<string, unknown>;
  };
  /** Any event (a bot message, an edit) wrapped as an `event_callback` body. */
  eventBody(event: Record<string, unknown>): Record<string, unknown>;
  /** A `block_actions` payload: `user` clicked the button `actionId` with `value` on the message `messageTs`. */
  buttonClick(input: {
    channel: string;
    messageTs: string;
    user: string;
    actionId: string;
    value: string;
    blockId?: string;
  }): Record<string, unknown>;
  /** Socket Mode: the connection and its envelopes. */
  readonly socket: {
    readonly connections: number;
    /** Connections ever opened (a reconnect after `disconnect` adds one). */
    readonly opened: number;
    readonly sent: readonly SentEnvelope[];
    /** Delivers an `events_api` envelope; see {@link SocketDeliveryOptions}. */
    deliverEvent(body: Record<string, unknown>, options?: SocketDeliveryOptions): Promise<SentEnvelope[]>;
    /** Delivers an `interactive` envelope (a `block_actions` payload). */
    deliverInteraction(payload: Record<string, unknown>, options?: SocketDeliveryOptions): Promise<SentEnvelope[]>;
    disconnect(reason?: string): void;
  };
  /**
   * POSTs a delivery to an app's HTTP endpoint as Slack does: JSON for events, form-encoded
   * `payload=` for interactions; signed with the signing secret unless `forge` is set.
   */
  postEvent(
    endpoint: string,
    body: Record<string, unknown>,
    options?: PostEventOptions,
  ): Promise<{ status: number; body: string }>;
  /** What a client shows: the thread with root `rootTs`, oldest first. */
  thread(channel: string, rootTs: string): SlackStandInMessage[];
  message(channel: string, ts: string): SlackStandInMessage | undefined;
  messages(): SlackStandInMessage[];
  /** Web API calls received, in order. */
  readonly calls: readonly SlackApiCall[];
  /** The next call(s) of `method` fail with `fault` (queued, one per call). */
  fail(method: string, ...faults: SlackFault[]): void;
  /**
   * The next call of `method` (whose arguments `match`, when given) is received (it is in
   * {@link calls}) but not answered until `release()`; then it is carried out as usual,
   * even if its client has gone meanwhile.
   */
  hold(method: string, match?: (args: Record<string, unknown>) => boolean): { release(): void };
  /** From now on calls of `method` (default every method) are received and never answered, as a hung Slack does. */
  silence(method?: string): void;
  /** From now on every call of `method` is answered 429 with `Retry-After: retryAfter` (seconds), as a busy workspace is. */
  rateLimit(method: string, retryAfter: number): void;
  /** Makes a channel disappear: calls naming it get `channel_not_found`. */
  removeChannel(channel: string): void;
  /** Deletes a message as a user or admin would: calls naming it get `message_not_found`. */
  deleteMessage(channel: string, ts: string): void;
  close(): Promise<void>;
}

/** Options of {@link SlackStandIn.postEvent}. */
export interface PostEventOptions {
  /** `X-Slack-Retry-Num` (1–3) and `X-Slack-Retry-Reason` of a retried delivery. */
  retryNum?: number;
  retryReason?: string;
  /** Sign with this secret instead (a forged request). */
  forge?: string;
  /** Request timestamp in seconds (default: now); an old one tests the replay window. */
  timestamp?: number;
  /** Send as an interaction: `application/x-www-form-urlencoded` with `payload=<json>`. */
  interactive?: boolean;
}

/** Starts the stand-in; see {@link SlackStandIn}. */
export async function startSlackStandIn(): Promise<SlackStandIn> {
  const ids = { teamId: 'T0STANDIN', appId: 'A0STANDIN', botUserId: 'U0CODEFLEET', botId: 'B0CODEFLEET' };
  // Fresh per stand-in and built at run time: a token-shaped literal in source is what the
  // secret scan (rightly) refuses, and a fixed one could leak between tests.
  const nonce = randomBytes(8).toString('hex');
  const secrets = {
    botToken: ['xoxb', 'standin', nonce].join('-'),
    appToken: ['xapp', '1', 'standin', nonce].join('-'),
    signingSecret: `standin-signing-${nonce}`,
  };
  const state = new SlackState();
  const hub = new SocketModeHub(ids.appId);
  const calls: SlackApiCall[] = [];
  const faults = new Map<string, SlackFault[]>();
  const holds: WebApiContext['holds'] = new Map();
  const silent = new Set<string>();
  const rateLimited = new Map<string, number>();
  let wsBase = '';
  const ctx: WebApiContext = {
    state,
    ...secrets,
    ...ids,
    socketUrl: () => hub.issueUrl(wsBase),
    faults,
    holds,
    calls,
    silent,
    rateLimited,
  };

  const server = createServer((req, res) => {
    const match = /^\/api\/([A-Za-z.]+)$/.exec((req.url ?? '').split('?')[0] ?? '');
    if (req.method !== 'POST' && req.method !== 'GET') return void res.writeHead(405).end();
    if (match?.[1] === undefined) return void res.writeHead(404).end();
    serveWebApi(ctx, match[1], req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  server.on('upgrade', (req, socket, head) => hub.handleUpgrade(req, socket, head));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  wsBase = `ws://127.0.0.1:${port}`;

  const userMessage = (input: { channel: string; user: string; text: string; thread_ts?: string }) =>
    state.add({
      channel: input.channel,
      user: input.user,
      text: input.text,
      ...(input.thread_ts === undefined ? {} : { thread_ts: input.thread_ts }),
    });
  const threadOf = (thread_ts: string | undefined) => (thread_ts === undefined ? {} : { thread_ts });

  return {
    url,
    apiUrl: `${url}/api/`,
    ...secrets,
    ...ids,
    mention: (input) => {
      const stored = userMessage(input);
      const event = {
        type: 'app_mention',
        user: input.user,
        text: input.text,
        ts: stored.ts,
        channel: input.channel,
        event_ts: stored.ts,
        team: ids.teamId,
        ...threadOf(input.thread_ts),
      };
      return { ts: stored.ts, body: eventCallback(event, ids) };
    },
    directMessage: (input) => {
      const stored = userMessage(input);
      const event = {
        type: 'message',
        user: input.user,
        text: input.text,
        ts: stored.ts,
        channel: input.channel,
        event_ts: stored.ts,
        channel_type: 'im',
        team: ids.teamId,
        ...threadOf(input.thread_ts),
      };
      return { ts: stored.ts, body: eventCallback(event, ids) };
    },
    eventBody: (event) => eventCallback(event, ids),
    buttonClick: (input) =>
      blockActions({
        ...input,
        ids,
        message: state.get(input.channel, input.messageTs) as unknown as Record<string, unknown>,
      }),
    socket: {
      get connections() {
        return hub.connections;
      },
      get opened() {
        return hub.opened;
      },
      sent: hub.sent,
      deliverEvent: (body, options) => hub.deliver('events_api', body, options),
      deliverInteraction: (payload, options) => hub.deliver('interactive', payload, options),
      disconnect: (reason) => hub.disconnect(reason),
    },
    postEvent: async (endpoint, body, options = {}) => {
      const raw = options.interactive
        ? new URLSearchParams({ payload: JSON.stringify(body) }).toString()
        : JSON.stringify(body);
      const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
      const headers: Record<string, string> = {
        'content-type': options.interactive ? 'application/x-www-form-urlencoded' : 'application/json',
        'x-slack-request-timestamp': String(timestamp),
        'x-slack-signature': signSlackRequest(options.forge ?? secrets.signingSecret, timestamp, raw),
      };
      if (options.retryNum !== undefined) {
        headers['x-slack-retry-num'] = String(options.retryNum);
        headers['x-slack-retry-reason'] = options.retryReason ?? 'http_timeout';
      }
      const response = await fetch(endpoint, { method: 'POST', headers, body: raw });
      return { status: response.status, body: await response.text() };
    },
    thread: (channel, rootTs) => state.thread(channel, rootTs),
    message: (channel, ts) => state.get(channel, ts),
    messages: () => state.all(),
    calls,
    fail: (method, ...more) => faults.set(method, [...(faults.get(method) ?? []), ...more]),
    hold: (method, match = () => true) => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      holds.set(method, [...(holds.get(method) ?? []), { match, gate }]);
      return { release: () => release() };
    },
    silence: (method = '*') => void silent.add(method),
    rateLimit: (method, retryAfter) => void rateLimited.set(method, retryAfter),
    removeChannel: (channel) => state.gone.add(channel),
    deleteMessage: (channel, ts) => void state.delete(channel, ts),
    close: async () => {
      await hub.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
