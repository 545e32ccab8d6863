import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { createInbox, type ChatService } from '@codefleet/chat';
import type { LineConfig } from '@codefleet/config';
import { CodefleetError } from '@codefleet/core';
import { acceptRawBody, createHttpApp, listen, rawBodyOf, type Listening } from '@codefleet/http-server';
import { maskForPublishing, type Logger, type SecretSource } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import type { RunStore } from '@codefleet/store';
import { createLineClient, type LineClient } from './client.js';
import { lineRecordOf } from './events.js';
import { lineMessageHandler } from './line-message.js';
import { receiveLineDelivery } from './line-receive.js';

export { lineEventTtlMs } from './line-message.js';

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

/** The LINE webhook: routes to mount in another server, or a server of its own around them. */
export interface LineWebhook {
  /**
   * The webhook as a Fastify plugin answering POST on any path under the prefix it is
   * registered at (`codefleet serve`: `/line`). Registering it starts processing the records.
   */
  readonly routes: (scope: FastifyInstance) => Promise<void>;
  /** Listens on `config.host`:`config.port` (0 or unset: a free port), any path. */
  listen(): Promise<void>;
  /** `http://host:port` once listening. */
  readonly url: string;
  /** Resolves when the events recorded so far have been handled (tests). */
  idle(): Promise<void>;
  /** Stops listening (when it did), then processing: the record being handled finishes, what waits stays recorded. */
  close(): Promise<void>;
}

/** The channel secret and access token, or the error that says which variables to set. */
function credentialsOf(config: LineConfig): { secret: string; token: string } {
  const secret = config.channel_secret;
  const token = config.channel_access_token;
  if (secret === undefined || secret === '' || token === undefined || token === '') {
    throw new CodefleetError(
      'invalid_config',
      `LINE needs the channel secret and access token (${config.channel_secret_env}, ${config.channel_access_token_env})`,
      { verdict: 'permanent' },
    );
  }
  return { secret, token };
}

/** Resolves once no record waits or is being handled (one waiting for a retry is not waited for). */
async function untilIdle(inbox: Pick<Queue, 'stats'>): Promise<void> {
  for (;;) {
    const stats = await inbox.stats();
    if (stats.ready + stats.inFlight === 0) return;
    await sleep(20);
  }
}

/**
 * Receives LINE webhooks. The `x-line-signature` is checked on the raw body before anything
 * is parsed: missing or forged is 401 and nothing happens. Each text message addressed to
 * the bot (any in a one-to-one chat; in a group or room one that mentions the bot or starts
 * with `line.group_prefix`) is **recorded in the inbox, keyed by its `webhookEventId`,
 * before the 200**: LINE does not send an event again once it had its 200, so a process
 * killed afterwards finds the record at its next start; when the record cannot be written
 * the answer is 500 and LINE redelivers (`deliveryContext.isRedelivery`). Events are handled
 * from the record (see {@link lineMessageHandler}).
 */
export function createLineWebhook(options: LineWebhookOptions): LineWebhook {
  const { config, log } = options;
  const { secret, token } = credentialsOf(config);
  const client = options.client ?? createLineClient({ apiUrl: config.api_url, accessToken: token });
  const mask = (text: string) => maskForPublishing(text, options.secrets);
  const handleMessage = lineMessageHandler({ config, chat: options.chat, store: options.store, client, log, mask });
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
  let server: Listening | undefined;
  const receiving = { secret, groupPrefix: config.group_prefix, inbox, log };

  const routes = async (scope: FastifyInstance): Promise<void> => {
    running ??= inbox.run(processing.signal);
    acceptRawBody(scope, lineMaxBodyBytes);
    const refuse = (status: number, error: string) => {
      log.warn({ event: 'line.refused', status, reason: error }, 'LINE webhook refused');
      return { error };
    };
    scope.setErrorHandler((error: FastifyError, _req, reply) => {
      // Unread bytes would be taken for the next request on a keep-alive connection: close it.
      if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
        return reply.code(413).header('connection', 'close').send(refuse(413, 'payload too large'));
      log.error({ err: error, event: 'line.webhook_failed' }, 'LINE webhook handler failed');
      return reply.code(500).header('connection', 'close').send();
    });
    const receive = async (req: FastifyRequest) => {
      if (req.method !== 'POST') return { status: 405, body: refuse(405, 'POST only') };
      const signature = req.headers['x-line-signature'];
      const answer = await receiveLineDelivery(
        receiving,
        rawBodyOf(req.body),
        typeof signature === 'string' ? signature : undefined,
      );
      if (answer.status >= 400) refuse(answer.status, String(answer.body.error));
      return answer;
    };
    for (const path of ['/', '/*'])
      scope.all(path, async (req, reply) => {
        const answer = await receive(req);
        return reply.code(answer.status).send(answer.body);
      });
  };

  return {
    routes,
    get url() {
      return server?.url ?? '';
    },
    async listen() {
      server = await listenAlone(routes, config, async () => {
        processing.abort();
        await running;
      });
    },
    idle: () => untilIdle(options.inbox),
    async close() {
      await server?.close();
      processing.abort();
      await running;
    },
  };
}

/**
 * The webhook on a port of its own. Registering its routes started the processing: when
 * the port cannot be had, `stopProcessing` ends it, or the process that failed to start
 * would never end (serve once spun on a closed inbox when its LINE port was taken).
 */
async function listenAlone(
  routes: (scope: FastifyInstance) => Promise<void>,
  config: LineConfig,
  stopProcessing: () => Promise<void>,
): Promise<Listening> {
  const app = createHttpApp();
  await app.register(routes);
  try {
    return await listen(app, { port: config.port ?? 0, host: config.host });
  } catch (error) {
    await stopProcessing();
    await app.close();
    throw error;
  }
}
