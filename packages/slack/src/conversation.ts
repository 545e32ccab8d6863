import type { ChatMessage, ChatOutcome, ChatService } from '@codefleet/chat';
import type { SlackConfig } from '@codefleet/config';
import { graphemePrefix } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { RunStore } from '@codefleet/store';
import type { WebClient } from '@slack/web-api';
import { platformError } from './errors.js';
import { bounded, escapeMrkdwn } from './mrkdwn.js';
import { readSlackText } from './slack-text.js';

/** A recorded mention or DM, its text still in Slack's markup (see intake.ts). */
export interface RecordedMessage {
  channel: string;
  ts: string;
  thread_ts?: string;
  user: string;
  text: string;
  botUserId?: string;
  /** How many files came with it. */
  files: number;
}

/** What the status message says to a DM or mention with a file and no text. */
const filesOnlyText =
  "I can't read attached files or images: I only read the text of a message. Send the request as text (paste the part that matters), with `repo=owner/name` if the channel has no repository.";

/** A message that asks codefleet for something: a mention in a channel or a DM, its text read. */
function readRequest(record: RecordedMessage): IncomingRequest {
  return {
    channel: record.channel,
    ts: record.ts,
    user: record.user,
    text: readSlackText(record.text, record.botUserId),
    ...(record.thread_ts === undefined ? {} : { thread_ts: record.thread_ts }),
  };
}

/** A message that asks codefleet for something: a mention in a channel or a DM. */
export interface IncomingRequest {
  channel: string;
  ts: string;
  thread_ts?: string;
  user: string;
  /** The text as the user wrote it (Slack's markup read, the bot's mention taken out). */
  text: string;
}

/** The question with buttons waiting for a click, kept under `slack-ask:<channel>:<status ts>`. */
interface PendingQuestion {
  message: ChatMessage;
  choices: string[];
}

/** Prefix of the action ids of the repository buttons. */
export const repoActionPrefix = 'codefleet_repo_';

/** How long a message (channel + ts) is remembered: longer than Slack's retries (about 5 minutes) by far. */
const rememberMs = 7 * 24 * 3_600_000;

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

/**
 * What the producer does with a request once Slack has its ack: claim the message, mark
 * it received, post the one status message, hand it to the chat service and edit the
 * status message to say what happened.
 */
export function createConversation(deps: ConversationDeps) {
  const { config, chat, store, client, log } = deps;

  const bestEffort = async (what: string, write: () => Promise<unknown>) => {
    try {
      await write();
    } catch (error) {
      log.warn({ event: 'slack.write_failed', err: error, slack: platformError(error) }, `Slack ${what} failed`);
    }
  };

  const toMessage = (request: IncomingRequest, statusTs: string | undefined): ChatMessage => {
    // Own keys only: an id such as `constructor` must not find something on Object.prototype.
    const login = Object.hasOwn(config.users, request.user) ? config.users[request.user] : undefined;
    const channelRepo = Object.hasOwn(config.channels, request.channel)
      ? config.channels[request.channel]?.repo
      : undefined;
    return {
      platform: 'slack',
      channel: request.channel,
      thread: request.thread_ts ?? request.ts,
      messageId: request.ts,
      user: request.user,
      text: request.text,
      access: { ...(login === undefined ? {} : { login }), allowedLocal: config.allowed_users.includes(request.user) },
      repoHints: [channelRepo, config.default_repo].filter((r): r is string => r !== undefined),
      ...(statusTs === undefined ? {} : { statusMessageId: statusTs }),
      ...(deps.defer === undefined ? {} : { deferFollowUp: true }),
    };
  };

  async function show(message: ChatMessage, statusTs: string | undefined, outcome: ChatOutcome): Promise<void> {
    let rendered = render(outcome);
    if (outcome.kind === 'ask_repo' && outcome.choices.length > 0) {
      // The buttons need the original message kept for the click; when it cannot be kept
      // (no status message to hang it on, or too long for a request key) ask in words.
      const pending: PendingQuestion = { message, choices: outcome.choices };
      const kept =
        statusTs !== undefined &&
        (await store.setRequest(`slack-ask:${message.channel}:${statusTs}`, JSON.stringify(pending), rememberMs).then(
          () => true,
          (error: unknown) => {
            log.warn(
              { event: 'slack.question_not_kept', err: error },
              'could not keep the question for its buttons; asking in words',
            );
            return false;
          },
        ));
      if (!kept) rendered = render({ ...outcome, choices: [] });
    }
    await update(message, statusTs, rendered.text, rendered.blocks);
  }

  async function update(
    message: ChatMessage,
    statusTs: string | undefined,
    text: string,
    blocks?: unknown[],
  ): Promise<void> {
    const args = { channel: message.channel, text, ...(blocks === undefined ? {} : { blocks: blocks as never }) };
    if (statusTs === undefined)
      await bestEffort('chat.postMessage', () => client.chat.postMessage({ ...args, thread_ts: message.thread }));
    // chat.update with text alone keeps the message's blocks (the question's buttons): an
    // edit always says which blocks it has, none by default.
    else
      await bestEffort('chat.update', () =>
        client.chat.update({ ...args, blocks: (blocks ?? []) as never, ts: statusTs }),
      );
  }

  /** Posts the one status message and keeps its ts under the claim, so a second run edits it instead of posting another. */
  async function postStatus(key: string, request: IncomingRequest, note: string): Promise<string | undefined> {
    try {
      const sent = await client.chat.postMessage({
        channel: request.channel,
        thread_ts: request.thread_ts ?? request.ts,
        text: `:eyes: Looking at your request…${note}`,
      });
      if (sent.ts !== undefined) await store.setRequest(key, sent.ts, rememberMs);
      return sent.ts;
    } catch (error) {
      log.warn(
        { event: 'slack.write_failed', err: error, slack: platformError(error) },
        'could not post the Slack status message; the job will post its own',
      );
      return undefined;
    }
  }

  async function run(message: ChatMessage, statusTs: string | undefined): Promise<void> {
    let outcome: ChatOutcome;
    try {
      outcome = await chat.handle(message);
    } catch (error) {
      log.error(
        { event: 'slack.chat_failed', err: error, channel: message.channel, message: message.messageId },
        'the chat service failed on a Slack message',
      );
      await update(
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
    if (outcome.kind === 'deferred') {
      try {
        if (deps.defer === undefined) throw new Error('no follow-up processor');
        await deps.defer(message, outcome);
      } catch (error) {
        log.error(
          { event: 'slack.defer_failed', err: error, channel: message.channel, message: message.messageId },
          'could not keep a follow-up',
        );
        await update(
          message,
          statusTs,
          `:warning: Job ${escapeMrkdwn(outcome.jobId)} of this thread is still running and I couldn't keep your request for later. Please send it again when that job has finished.`,
        );
        return;
      }
    }
    await show(message, statusTs, outcome);
  }

  return {
    /** Tells the sender what became of a message handled later (a kept follow-up): its status message is edited. */
    tell: (message: ChatMessage, outcome: ChatOutcome) => show(message, message.statusMessageId, outcome),

    /**
     * A recorded mention or DM, handled from its record: again after a crash (`attempt` > 1),
     * so each step is claimed and a second run finishes what the first did not: the status
     * message posted once (its ts kept under the claim), the chat service asked again (a
     * message makes one job however often it is asked), the claim marked `done` at the end.
     */
    async request(record: RecordedMessage, attempt = 1): Promise<void> {
      const key = `slack-msg:${record.channel}:${record.ts}`;
      const claim = await store.bindRequest(key, 'received', rememberMs);
      if (!claim.bound && (claim.value === 'done' || attempt === 1)) {
        // Done, or another process has it in hand right now (a first try): nothing to do here.
        log.info(
          { event: 'slack.request_duplicate', channel: record.channel, ts: record.ts },
          'Slack delivered a message again; already handled',
        );
        return;
      }
      const request = readRequest(record);
      let statusTs = claim.bound || claim.value === 'received' ? undefined : claim.value;
      if (statusTs === undefined) {
        await bestEffort('reactions.add', () =>
          client.reactions.add({ channel: request.channel, timestamp: request.ts, name: 'eyes' }),
        );
        statusTs = await postStatus(
          key,
          request,
          record.files > 0 && request.text !== '' ? ' (I read the text only, not attached files)' : '',
        );
      }
      if (record.files > 0 && request.text === '') {
        // Nothing but a file: there is no request to route. Say what the bot does with files instead of staying silent.
        await update(toMessage(request, statusTs), statusTs, filesOnlyText);
      } else {
        await run(toMessage(request, statusTs), statusTs);
      }
      await store.setRequest(key, 'done', rememberMs);
    },

    /** A click on one of the repository buttons under the status message `statusTs`. */
    async chooseRepo(recorded: { channel: string; statusTs: string; user: string; value: string }): Promise<void> {
      const click = { ...recorded, choice: recorded.value };
      const stored = await store.lookupRequest(`slack-ask:${click.channel}:${click.statusTs}`);
      const pending = stored === undefined ? undefined : (JSON.parse(stored) as PendingQuestion);
      if (pending === undefined) {
        await bestEffort('chat.update', () =>
          client.chat.update({
            channel: click.channel,
            ts: click.statusTs,
            text: 'This question has expired. Mention me again with `repo=owner/name`.',
            blocks: [],
          }),
        );
        return;
      }
      // The button's value comes from whoever clicked: only the asker may answer, and only
      // with one of the repositories offered.
      if (click.user !== pending.message.user || !pending.choices.includes(click.choice)) {
        log.warn(
          { event: 'slack.choice_ignored', channel: click.channel, user: click.user },
          'ignored a repository choice from another user or off the list',
        );
        return;
      }
      // The first choice wins; a run killed half-way is finished by the next try of the same choice.
      const key = `slack-choice:${click.channel}:${click.statusTs}`;
      const claim = await store.bindRequest(key, click.choice, rememberMs);
      if (!claim.bound && claim.value !== click.choice) return;
      await update(pending.message, click.statusTs, `:eyes: Using ${escapeMrkdwn(click.choice)}…`);
      await run({ ...pending.message, text: `${pending.message.text} repo=${click.choice}` }, click.statusTs);
      await store.setRequest(key, 'done', rememberMs);
    },
  };
}

/** What the status message says about an outcome (and its buttons, for `ask_repo`). */
function render(outcome: ChatOutcome): { text: string; blocks?: unknown[] } {
  switch (outcome.kind) {
    case 'enqueued':
      return {
        text: outcome.deduplicated
          ? `:eyes: Already on it: job ${escapeMrkdwn(outcome.jobId)} (${escapeMrkdwn(outcome.repo)}).`
          : `:inbox_tray: Queued as job ${escapeMrkdwn(outcome.jobId)} for ${escapeMrkdwn(outcome.repo)} (route ${outcome.route.name}). I will update this message as it runs.`,
      };
    case 'reply':
      return { text: escapeMrkdwn(bounded(outcome.text)) };
    case 'refused':
      return { text: `:no_entry_sign: ${escapeMrkdwn(bounded(outcome.text))}` };
    case 'deferred':
      return {
        text: `:hourglass_flowing_sand: Job ${escapeMrkdwn(outcome.jobId)} of this thread is still queued or running. I kept your request: it will start as a follow-up on the same branch when job ${escapeMrkdwn(outcome.jobId)} ends, and I will update this message then.`,
      };
    case 'ask_repo': {
      if (outcome.choices.length === 0)
        return { text: 'Which repository should I work on? Mention me again with `repo=owner/name`.' };
      const question = 'Which repository should I work on?';
      const buttons = outcome.choices.slice(0, 25).map((choice, index) => ({
        type: 'button',
        action_id: `${repoActionPrefix}${index}`,
        value: choice.slice(0, 2_000),
        text: { type: 'plain_text', text: graphemePrefix(choice, 75), emoji: false },
      }));
      return {
        text: question,
        blocks: [
          { type: 'section', text: { type: 'mrkdwn', text: question } },
          { type: 'actions', block_id: 'codefleet_repo', elements: buttons },
        ],
      };
    }
  }
}
