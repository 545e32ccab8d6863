import type { ChatMessage, ChatService } from '@codefleet/chat';
import type { LineConfig } from '@codefleet/config';
import { classify } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { RunStore } from '@codefleet/store';
import { retryKeyOf, type LineClient } from './client.js';
import type { LineTextMessage } from './events.js';
import { outcomeText } from './texts.js';
import { eventKey } from './request-keys.js';

/** How long a webhook event id is remembered: LINE redelivers for a shorter time than this. */
export const lineEventTtlMs = 7 * 24 * 60 * 60 * 1000;

/** What {@link lineMessageHandler} needs. */
export interface LineMessageDeps {
  config: LineConfig;
  chat: ChatService;
  store: Pick<RunStore, 'bindRequest' | 'setRequest'>;
  client: LineClient;
  log: Logger;
  /** Masks secrets out of a text before it is sent. */
  mask: (text: string) => string;
}

/** The chat service's view of a LINE message: LINE forces the CHAT route, `/code` only with `line.allow_code`. */
function chatMessageOf(config: LineConfig, message: LineTextMessage): ChatMessage {
  const user = message.userId;
  return {
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
}

/** Answers with the reply token once; a token refused (expired or used) falls back to a push with a retry key. */
async function answer(deps: LineMessageDeps, message: LineTextMessage, text: string): Promise<void> {
  const { client, mask, log } = deps;
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
}

/**
 * Handles one recorded message: bound by its event id first, so a redelivery never reaches
 * the chat service twice; then the chat service decides and the outcome is the answer.
 * Runs again on the same record after a crash (`attempt` > 1): then a claim that is not
 * `done` is finished (the chat service makes one job of a message however often asked).
 */
export function lineMessageHandler(deps: LineMessageDeps) {
  const { config, chat, store, log } = deps;
  return async (message: LineTextMessage, attempt: number): Promise<void> => {
    const elog = log.child({ webhook_event_id: message.webhookEventId, line_to: message.to });
    const key = eventKey(message.webhookEventId);
    const bound = await store.bindRequest(key, message.messageId, lineEventTtlMs);
    if (!bound.bound && (bound.value === 'done' || attempt === 1)) {
      elog.info({ event: 'line.duplicate', redelivery: message.isRedelivery }, 'LINE event already handled');
      return;
    }
    let text: string;
    try {
      const outcome = await chat.handle(chatMessageOf(config, message));
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
    await answer(deps, message, text);
    await store.setRequest(key, 'done', lineEventTtlMs);
  };
}
