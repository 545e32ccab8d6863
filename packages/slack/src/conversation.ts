import type { ChatMessage, ChatOutcome } from '@codefleet/chat';
import {
  bestEffort,
  handleMessage,
  rememberMs,
  showOutcome,
  updateStatus,
  type ConversationDeps,
  type PendingQuestion,
} from './conversation-reply.js';
import { platformError } from './errors.js';
import { escapeMrkdwn } from './mrkdwn.js';
import { filesOnlyText, receivedStatus, stateReactions } from './status.js';
import { readSlackText } from './slack-text.js';
import type { RequestKey } from '@codefleet/store';
import { choiceKey, messageKey, questionKey } from './request-keys.js';

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
interface IncomingRequest {
  channel: string;
  ts: string;
  thread_ts?: string;
  user: string;
  /** The text as the user wrote it (Slack's markup read, the bot's mention taken out). */
  text: string;
}

/** The chat message for a request: who asks (their login, if mapped) and which repositories the channel suggests. */
function toMessage(deps: ConversationDeps, request: IncomingRequest, statusTs: string | undefined): ChatMessage {
  const { config } = deps;
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
}

/** Posts the one status message and keeps its ts under the claim, so a second run edits it instead of posting another. */
async function postStatus(
  deps: ConversationDeps,
  key: RequestKey,
  request: IncomingRequest,
  note: string,
): Promise<string | undefined> {
  try {
    const sent = await deps.client.chat.postMessage({
      channel: request.channel,
      thread_ts: request.thread_ts ?? request.ts,
      text: receivedStatus(note),
    });
    if (sent.ts !== undefined) await deps.store.setRequest(key, sent.ts, rememberMs);
    return sent.ts;
  } catch (error) {
    deps.log.warn(
      { event: 'slack.write_failed', err: error, slack: platformError(error) },
      'could not post the Slack status message; the job will post its own',
    );
    return undefined;
  }
}

/**
 * A recorded mention or DM, handled from its record: again after a crash (`attempt` > 1),
 * so each step is claimed and a second run finishes what the first did not: the status
 * message posted once (its ts kept under the claim), the chat service asked again (a
 * message makes one job however often it is asked), the claim marked `done` at the end.
 */
async function handleRequest(deps: ConversationDeps, record: RecordedMessage, attempt: number): Promise<void> {
  const { store, client, log } = deps;
  const key = messageKey(record.channel, record.ts);
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
    await bestEffort(log, 'reactions.add', () =>
      client.reactions.add({ channel: request.channel, timestamp: request.ts, name: stateReactions.queued }),
    );
    statusTs = await postStatus(
      deps,
      key,
      request,
      record.files > 0 && request.text !== '' ? ' (I read the text only, not attached files)' : '',
    );
  }
  if (record.files > 0 && request.text === '') {
    // Nothing but a file: there is no request to route. Say what the bot does with files instead of staying silent.
    await updateStatus(deps, toMessage(deps, request, statusTs), statusTs, filesOnlyText);
  } else {
    await handleMessage(deps, toMessage(deps, request, statusTs), statusTs);
  }
  await store.setRequest(key, 'done', rememberMs);
}

/** A click on one of the repository buttons under the status message `statusTs`. */
async function chooseRepo(
  deps: ConversationDeps,
  recorded: { channel: string; statusTs: string; user: string; value: string },
): Promise<void> {
  const { store, client, log } = deps;
  const click = { ...recorded, choice: recorded.value };
  const stored = await store.lookupRequest(questionKey(click.channel, click.statusTs));
  const pending = stored === undefined ? undefined : (JSON.parse(stored) as PendingQuestion);
  if (pending === undefined) {
    await bestEffort(log, 'chat.update', () =>
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
  const key = choiceKey(click.channel, click.statusTs);
  const claim = await store.bindRequest(key, click.choice, rememberMs);
  if (!claim.bound && claim.value !== click.choice) return;
  await updateStatus(deps, pending.message, click.statusTs, `:eyes: Using ${escapeMrkdwn(click.choice)}…`);
  await handleMessage(
    deps,
    { ...pending.message, text: `${pending.message.text} repo=${click.choice}` },
    click.statusTs,
  );
  await store.setRequest(key, 'done', rememberMs);
}

/**
 * What the producer does with a request once Slack has its ack: claim the message, mark
 * it received, post the one status message, hand it to the chat service and edit the
 * status message to say what happened.
 */
export function createConversation(deps: ConversationDeps) {
  return {
    /** Tells the sender what became of a message handled later (a kept follow-up): its status message is edited. */
    tell: (message: ChatMessage, outcome: ChatOutcome) => showOutcome(deps, message, message.statusMessageId, outcome),
    /** A recorded mention or DM, handled from its record (again after a crash: `attempt` > 1). */
    request: (record: RecordedMessage, attempt = 1) => handleRequest(deps, record, attempt),
    /** A click on one of the repository buttons under the status message `statusTs`. */
    chooseRepo: (recorded: { channel: string; statusTs: string; user: string; value: string }) =>
      chooseRepo(deps, recorded),
  };
}
