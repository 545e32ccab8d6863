import type { ChatMessage, ChatOutcome, ChatService } from '@codefleet/chat';
import type { SlackConfig } from '@codefleet/config';
import type { Logger } from '@codefleet/log';
import type { RunStore } from '@codefleet/store';
import type { WebClient } from '@slack/web-api';
import { platformError } from './errors.js';
import { escapeMrkdwn } from './mrkdwn.js';
import { renderOutcome } from './status.js';
import { questionKey } from './request-keys.js';

export interface ConversationDeps {
  config: SlackConfig;
  chat: ChatService;
  store: Pick<RunStore, 'bindRequest' | 'setRequest' | 'lookupRequest'>;
  client: WebClient;
  log: Logger;
  /**
   * Keeps a follow-up the chat service deferred (the thread's job is still queued or running)
   * until that job ends; without it such a message is turned back with a reply.
   */
  defer?: (message: ChatMessage, deferred: Extract<ChatOutcome, { kind: 'deferred' }>) => Promise<void>;
}

/** The question with buttons waiting for a click, kept under `slack:ask:<channel>:<status ts>`. */
export interface PendingQuestion {
  message: ChatMessage;
  choices: string[];
}

/** How long a message (channel + ts) is remembered: longer than Slack's retries (about 5 minutes) by far. */
export const rememberMs = 7 * 24 * 3_600_000;

/** A write the conversation goes on without: a failure is logged, not thrown. */
export async function bestEffort(log: Logger, what: string, write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (error) {
    log.warn({ event: 'slack.write_failed', err: error, slack: platformError(error) }, `Slack ${what} failed`);
  }
}

/** Edits the status message `statusTs` to `text`, or posts a reply in the thread when there is none. */
export async function updateStatus(
  deps: ConversationDeps,
  message: ChatMessage,
  statusTs: string | undefined,
  text: string,
  blocks?: unknown[],
): Promise<void> {
  const { client, log } = deps;
  const args = { channel: message.channel, text, ...(blocks === undefined ? {} : { blocks: blocks as never }) };
  if (statusTs === undefined)
    await bestEffort(log, 'chat.postMessage', () => client.chat.postMessage({ ...args, thread_ts: message.thread }));
  // chat.update with text alone keeps the message's blocks (the question's buttons): an
  // edit always says which blocks it has, none by default.
  else
    await bestEffort(log, 'chat.update', () =>
      client.chat.update({ ...args, blocks: (blocks ?? []) as never, ts: statusTs }),
    );
}

/** Says on the status message what became of a message; a question with buttons is kept for the click. */
export async function showOutcome(
  deps: ConversationDeps,
  message: ChatMessage,
  statusTs: string | undefined,
  outcome: ChatOutcome,
): Promise<void> {
  const { store, log } = deps;
  let rendered = renderOutcome(outcome);
  if (outcome.kind === 'ask_repo' && outcome.choices.length > 0) {
    // The buttons need the original message kept for the click; when it cannot be kept
    // (no status message to hang it on, or too long for a request key) ask in words.
    const pending: PendingQuestion = { message, choices: outcome.choices };
    const kept =
      statusTs !== undefined &&
      (await store.setRequest(questionKey(message.channel, statusTs), JSON.stringify(pending), rememberMs).then(
        () => true,
        (error: unknown) => {
          log.warn(
            { event: 'slack.question_not_kept', err: error },
            'could not keep the question for its buttons; asking in words',
          );
          return false;
        },
      ));
    if (!kept) rendered = renderOutcome({ ...outcome, choices: [] });
  }
  await updateStatus(deps, message, statusTs, rendered.text, rendered.blocks);
}

/** Hands a message to the chat service and shows its outcome; a deferred follow-up is kept for later. */
export async function handleMessage(
  deps: ConversationDeps,
  message: ChatMessage,
  statusTs: string | undefined,
): Promise<void> {
  const { chat, log } = deps;
  let outcome: ChatOutcome;
  try {
    outcome = await chat.handle(message);
  } catch (error) {
    log.error(
      { event: 'slack.chat_failed', err: error, channel: message.channel, message: message.messageId },
      'the chat service failed on a Slack message',
    );
    await updateStatus(
      deps,
      message,
      statusTs,
      ':warning: Something went wrong on my side before any work started. Please try again in a moment.',
    );
    return;
  }
  log.info(
    {
      event: 'slack.request_handled',
      channel: message.channel,
      message: message.messageId,
      outcome: outcome.kind,
      route: outcome.route,
    },
    'Slack request handled',
  );
  // Slack's own redeliveries stop at the claim: a message whose job already exists is one
  // handled again after a crash, and its status message says what the first run would have.
  if (outcome.kind === 'enqueued' && outcome.deduplicated) outcome = { ...outcome, deduplicated: false };
  if (outcome.kind === 'deferred' && !(await keepDeferred(deps, message, statusTs, outcome))) return;
  await showOutcome(deps, message, statusTs, outcome);
}

/** Keeps a deferred follow-up; when it cannot be kept, tells the sender so and says false. */
async function keepDeferred(
  deps: ConversationDeps,
  message: ChatMessage,
  statusTs: string | undefined,
  outcome: Extract<ChatOutcome, { kind: 'deferred' }>,
): Promise<boolean> {
  try {
    if (deps.defer === undefined) throw new Error('no follow-up processor');
    await deps.defer(message, outcome);
    return true;
  } catch (error) {
    deps.log.error(
      { event: 'slack.defer_failed', err: error, channel: message.channel, message: message.messageId },
      'could not keep a follow-up',
    );
    await updateStatus(
      deps,
      message,
      statusTs,
      `:warning: Job ${escapeMrkdwn(outcome.jobId)} of this thread is still running and I couldn't keep your request for later. Please send it again when that job has finished.`,
    );
    return false;
  }
}
