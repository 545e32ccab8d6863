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
  text: string;
}

/** What one webhook event is to codefleet. */
export type LineEventReading =
  | { kind: 'text'; message: LineTextMessage }
  /** Other events (follow, unfollow, join, a sticker, an image, a standby-mode event): nothing to do. */
  | { kind: 'ignore'; type: string; reason: string };

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const obj = (value: unknown): Record<string, unknown> => (value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {});

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
  if (message.type !== 'text') return { kind: 'ignore', type, reason: `a ${str(message.type) ?? 'unknown'} message, not text` };
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
  return {
    kind: 'text',
    message: {
      webhookEventId, isRedelivery: obj(event.deliveryContext).isRedelivery === true, to, messageId, text,
      ...(userId === undefined ? {} : { userId }), ...(replyToken === undefined ? {} : { replyToken }),
    },
  };
}
