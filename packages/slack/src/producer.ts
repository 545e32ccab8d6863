import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createInbox, type ChatMessage, type ChatOutcome, type ChatService } from '@codefleet/chat';
import type { SlackConfig } from '@codefleet/config';
import { CodefleetError } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { RunStore } from '@codefleet/store';
import type { Queue } from '@codefleet/queue';
import { App, HTTPReceiver, SocketModeReceiver } from '@slack/bolt';
import type { WebClientOptions } from '@slack/web-api';
import { boltLogger } from './bolt-logger.js';
import { slackClientOptions } from './outbound.js';
import { createConversation } from './conversation.js';
import { recordingReceiver, slackRecordOf } from './intake.js';

/** Options of {@link createSlackProducer}. */
export interface SlackProducerOptions {
  config: SlackConfig;
  chat: ChatService;
  store: Pick<RunStore, 'bindRequest' | 'setRequest' | 'releaseRequest' | 'lookupRequest'>;
  /**
   * Where events are recorded before Slack gets its ack: a queue of their own
   * (`<queue.name>-slack-inbox`), never the jobs' queue. The producer also processes it.
   */
  inbox: Queue;
  log: Logger;
  /** Web API client options over Slack's outbound policy (for tests: no retries, an HTTP agent). */
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
  /**
   * Connects (Socket Mode) or listens (HTTP); resolves the events URL in HTTP mode. With
   * `mount` (HTTP mode), listens on no port: `mount` is given the request handler to serve
   * `/slack/events` with on another server (`codefleet serve`'s one port), and no URL is resolved.
   */
  start(options?: { mount?: (handler: (req: IncomingMessage, res: ServerResponse) => void) => void }): Promise<{
    eventsUrl?: string;
  }>;
  /** Disconnects or stops listening, then stops the inbox processor (the record being handled finishes; the rest waits for the next start). */
  stop(): Promise<void>;
  /** Resolves once every recorded request has been handled (for tests). */
  idle(): Promise<void>;
  /** Edits the status message of a message handled later (a kept follow-up) to say what became of it. */
  tell(message: ChatMessage, outcome: ChatOutcome): Promise<void>;
}

/**
 * The Slack producer: a Bolt app on Socket Mode (the default: no public URL, fits hosts
 * behind NAT) or the Events API over HTTP (`slack.mode: http`, signatures verified by Bolt
 * with the signing secret and its 5-minute replay window). A mention, a direct message or a
 * button click is **recorded in the inbox before Slack gets its ack** (see
 * {@link recordingReceiver}), and the work happens from the record, in the inbox processor:
 * a process killed after the ack loses nothing (the record is handled at the next start),
 * and one killed before it is delivered again by Slack. Slack's retries of a recorded event
 * are the same record while it is pending, and stop at the message claim afterwards.
 */
export function createSlackProducer(options: SlackProducerOptions): SlackProducer {
  const { config, log } = options;
  const need = (value: string | undefined, env: string) => {
    if (value === undefined || value === '')
      throw new CodefleetError('invalid_config', `slack: ${env} is not set`, { verdict: 'permanent' });
    return value;
  };
  const socketMode = config.mode === 'socket';
  const logger = boltLogger(log);
  // Bolt's client gets Slack's outbound policy too (the SDK default is ten retries over half an hour).
  const clientOptions = (): WebClientOptions => ({
    slackApiUrl: config.api_url,
    ...slackClientOptions(),
    ...options.clientOptions,
  });
  // Our own Socket Mode receiver (a documented Bolt option) for two reasons: its
  // `installerOptions.clientOptions` carry `slack.api_url` to the client that calls
  // apps.connections.open, and `stop()` can wait for the close handshake, which Bolt's
  // `App.stop()` does not (it resolves before the socket is closed).
  const socket = socketMode
    ? new SocketModeReceiver({
        appToken: need(config.app_token, config.app_token_env),
        logger,
        installerOptions: { clientOptions: clientOptions() },
      })
    : undefined;
  const inner =
    socket ??
    new HTTPReceiver({
      signingSecret: need(config.signing_secret, config.signing_secret_env),
      logger,
      processBeforeResponse: false,
    });
  const inbox = createInbox({
    queue: options.inbox,
    platform: 'slack',
    log,
    handle: async (entry, attempt) => {
      const record = slackRecordOf(entry.event);
      if (record === undefined)
        throw new CodefleetError('invalid_job', `inbox record ${entry.key} is not a Slack event this producer reads`, {
          verdict: 'permanent',
        });
      await (record.kind === 'click' ? conversation.chooseRepo(record) : conversation.request(record, attempt));
    },
  });
  const app = new App({
    token: need(config.bot_token, config.bot_token_env),
    receiver: recordingReceiver(inner, inbox),
    clientOptions: clientOptions(),
    logger,
  });
  const conversation = createConversation({
    config,
    chat: options.chat,
    store: options.store,
    client: app.client,
    log,
    ...(options.defer === undefined ? {} : { defer: options.defer }),
  });
  app.error(async (error) => {
    log.error({ event: 'slack.app_error', err: error }, 'Slack app error');
  });
  // The inbox processor runs while the producer is started (start after stop runs it again).
  let processing: { controller: AbortController; running: Promise<void> } | undefined;
  // Mounted in another server: Bolt's receiver has no server of its own to stop.
  let mounted = false;

  // Idle once no record waits or is being handled (one waiting for a retry is not waited for).
  const idle = async () => {
    for (;;) {
      const stats = await options.inbox.stats();
      if (stats.ready + stats.inFlight === 0) return;
      await sleep(20);
    }
  };

  return {
    async start(startOptions = {}) {
      if (processing === undefined) {
        const controller = new AbortController();
        processing = { controller, running: inbox.run(controller.signal) };
      }
      if (socketMode) {
        await app.start();
        log.info({ event: 'slack.started', mode: 'socket' }, 'Slack producer connected');
        return {};
      }
      if (startOptions.mount !== undefined) {
        // The receiver routes by path (/slack/events) and checks signatures itself.
        const receiver = inner as HTTPReceiver;
        startOptions.mount((req, res) => receiver.requestListener(req, res));
        mounted = true;
        log.info({ event: 'slack.started', mode: 'http', mounted: true }, 'Slack producer mounted');
        return {};
      }
      const server = (await (app.start as unknown as HTTPReceiver['start'])({
        port: config.port ?? 0,
        host: config.host,
      })) as { address(): AddressInfo | string | null };
      const address = server.address() as AddressInfo;
      const eventsUrl = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${address.port}/slack/events`;
      log.info({ event: 'slack.started', mode: 'http', url: eventsUrl }, 'Slack producer listening');
      return { eventsUrl };
    },
    async stop() {
      try {
        if (socket !== undefined) await socket.client.disconnect();
        else if (!mounted) await app.stop();
      } finally {
        // What is being handled finishes; what waits stays recorded for the next start.
        const stopping = processing;
        processing = undefined;
        stopping?.controller.abort();
        await stopping?.running;
      }
    },
    idle,
    tell: conversation.tell,
  };
}
