/** A text message from a LINE webhook, reduced to what codefleet acts on. */
export interface LineTextMessage {
  /** Unique per event; a redelivery carries the same one (the dedup key). */
  webhookEventId: string;
  isRedelivery: boolean;
  replyToken?: string;
  /** Where to answer: the group, the room, or the user of a one-to-one chat. */
  to: string;
  /** The sender, when LINE says (a group member who has not added the bot may be absent). */
  userId?: string;
  messageId: string;
  /** The text as sent, except that a mention of the bot is taken out of it. */
  text: string;
  /** Where it was said: a one-to-one chat, a group or a room (several people). */
  chat: 'user' | 'group' | 'room';
  /** True when the message mentions the bot (`message.mention.mentionees[].isSelf`). */
  mentionsBot: boolean;
}

/** What one webhook event is to codefleet. */
export type LineEventReading =
  | { kind: 'text'; message: LineTextMessage }
  /** Other events (follow, unfollow, join, a sticker, an image, a standby-mode event): nothing to do. */
  | { kind: 'ignore'; type: string; reason: string };

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const obj = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};

/**
 * The events of a webhook body (`{destination, events: [...]}`). LINE's console verifies a
 * webhook URL with an empty `events` array; that reads as no events. Throws on a body that
 * is not a webhook at all.
 */
export function eventsOf(body: unknown): unknown[] {
  const events = obj(body).events;
  if (!Array.isArray(events)) throw new Error('not a LINE webhook body: no events array');
  return events;
}

/** Reads one event; anything not a usable text message is `ignore` with the reason. */
export function readEvent(raw: unknown): LineEventReading {
  const event = obj(raw);
  const type = str(event.type) ?? 'unknown';
  if (type !== 'message') return { kind: 'ignore', type, reason: `${type} events need no answer` };
  // In standby mode another channel (a module) owns the chat; it must not be answered here.
  if (event.mode === 'standby') return { kind: 'ignore', type, reason: 'standby mode' };
  const message = obj(event.message);
  if (message.type !== 'text')
    return { kind: 'ignore', type, reason: `a ${str(message.type) ?? 'unknown'} message, not text` };
  const source = obj(event.source);
  const to = str(source.groupId) ?? str(source.roomId) ?? str(source.userId);
  const webhookEventId = str(event.webhookEventId);
  const messageId = str(message.id);
  const text = typeof message.text === 'string' ? message.text : undefined;
  if (to === undefined || webhookEventId === undefined || messageId === undefined || text === undefined) {
    return { kind: 'ignore', type, reason: 'a text message without source, webhookEventId, id or text' };
  }
  const userId = str(source.userId);
  const replyToken = str(event.replyToken);
  const chat = str(source.groupId) !== undefined ? 'group' : str(source.roomId) !== undefined ? 'room' : 'user';
  const self = selfMentions(message.mention, text.length);
  return {
    kind: 'text',
    message: {
      webhookEventId,
      isRedelivery: obj(event.deliveryContext).isRedelivery === true,
      to,
      messageId,
      text: withoutSpans(text, self),
      chat,
      mentionsBot: self.length > 0,
      ...(userId === undefined ? {} : { userId }),
      ...(replyToken === undefined ? {} : { replyToken }),
    },
  };
}

/** The spans (`index`, `length`, in UTF-16 code units as LINE counts) of the mentions of the bot itself, last first. */
function selfMentions(mention: unknown, textLength: number): { index: number; length: number }[] {
  const mentionees = obj(mention).mentionees;
  if (!Array.isArray(mentionees)) return [];
  return mentionees
    .map(obj)
    .filter((m) => m.isSelf === true && Number.isSafeInteger(m.index) && Number.isSafeInteger(m.length))
    .map((m) => ({ index: m.index as number, length: m.length as number }))
    .filter((m) => m.index >= 0 && m.length > 0 && m.index + m.length <= textLength)
    .sort((a, b) => b.index - a.index);
}

/** `text` with the spans cut out (last first, so earlier indexes hold), spaces around them closed up. */
function withoutSpans(text: string, spans: { index: number; length: number }[]): string {
  let out = text;
  for (const span of spans)
    out = `${out.slice(0, span.index).trimEnd()} ${out.slice(span.index + span.length).trimStart()}`;
  return spans.length === 0 ? out : out.trim();
}

/**
 * The message as the bot should take it, or undefined when it is not for the bot: in a
 * one-to-one chat every message is; in a group or room (where people talk to each other)
 * only one that mentions the bot, or starts with `prefix` as a word (taken off the text).
 */
export function addressed(message: LineTextMessage, prefix: string | undefined): LineTextMessage | undefined {
  if (message.chat === 'user' || message.mentionsBot) return message;
  if (prefix === undefined) return undefined;
  const head = message.text.trimStart();
  const rest = head.slice(prefix.length);
  if (
    head.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase() ||
    (rest !== '' && !/^[\s:,、，：]/.test(rest))
  )
    return undefined;
  return { ...message, text: rest.replace(/^[\s:,、，：]+/, '') };
}

/** A recorded message read back from the inbox; undefined when it is not one the webhook wrote. */
export function lineRecordOf(event: unknown): LineTextMessage | undefined {
  const m = obj(event);
  const ok = (k: string) => typeof m[k] === 'string' && m[k] !== '';
  const shaped =
    ok('webhookEventId') &&
    ok('to') &&
    ok('messageId') &&
    typeof m.text === 'string' &&
    typeof m.isRedelivery === 'boolean' &&
    (m.chat === 'user' || m.chat === 'group' || m.chat === 'room') &&
    typeof m.mentionsBot === 'boolean' &&
    (m.userId === undefined || ok('userId')) &&
    (m.replyToken === undefined || ok('replyToken'));
  return shaped ? (m as unknown as LineTextMessage) : undefined;
}
