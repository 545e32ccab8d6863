import { createInbox, type ChatMessage, type ChatOutcome, type ChatService } from '@codefleet/chat';
import type { SlackConfig } from '@codefleet/config';
import { CodefleetError } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { RunStore } from '@codefleet/store';
import type { Queue } from '@codefleet/queue';
import { App } from '@slack/bolt';
import type { WebClientOptions } from '@slack/web-api';
import { boltLogger } from './bolt-logger.js';
import { createConversation } from './conversation.js';
import { recordingReceiver, slackRecordOf } from './intake.js';
import { inboxIdle, startProducer, stopProducer, type ProducerRun, type StartOptions } from './producer-lifecycle.js';
import { boltClientOptions, createReceiver, requireSecret } from './producer-receiver.js';

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
  start(options?: StartOptions): Promise<{ eventsUrl?: string }>;
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
  const logger = boltLogger(log);
  const receiver = createReceiver(config, logger, options.clientOptions);
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
    token: requireSecret(config.bot_token, config.bot_token_env),
    receiver: recordingReceiver(receiver.receiver, inbox),
    clientOptions: boltClientOptions(config, options.clientOptions),
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
  const run: ProducerRun = { config, log, app, receiver, inbox, processing: undefined, mounted: false };
  return {
    start: (startOptions = {}) => startProducer(run, startOptions),
    stop: () => stopProducer(run),
    idle: () => inboxIdle(options.inbox),
    tell: conversation.tell,
  };
}
