import type { Inbox } from '@codefleet/chat';
import type { App, Receiver, ReceiverEvent } from '@slack/bolt';
import { repoActionPrefix } from './status.js';

/**
 * What the producer records of a Slack delivery, before Slack has its ack: the event reduced
 * to what the conversation reads, the text still in Slack's markup (read when handled).
 */
export type SlackRecord =
  /** A mention in a channel, or a direct message. */
  | {
      kind: 'message';
      channel: string;
      ts: string;
      thread_ts?: string;
      user: string;
      text: string;
      botUserId?: string;
      files: number;
    }
  /** A click on one of the repository buttons under the status message `statusTs`. */
  | { kind: 'click'; channel: string; statusTs: string; user: string; value: string; actionTs: string };

interface EventFields {
  type?: unknown;
  subtype?: unknown;
  bot_id?: unknown;
  user?: unknown;
  text?: unknown;
  ts?: unknown;
  thread_ts?: unknown;
  channel?: unknown;
  channel_type?: unknown;
  files?: unknown;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * The record of a delivery, with its key (every delivery of one message or click shares
 * it), or undefined when the delivery asks nothing of codefleet (Bolt handles it as before).
 * Taken: `app_mention`, a direct message (`message` with `channel_type: im`, plain or
 * `file_share`) from a person, and a click on a repository button.
 */
function readDelivery(body: Record<string, unknown>): { key: string; record: SlackRecord } | undefined {
  if (body.type === 'event_callback') return readMessage(body);
  if (body.type !== 'block_actions') return undefined;
  const payload = body as {
    container?: { channel_id?: unknown; message_ts?: unknown };
    user?: { id?: unknown };
    actions?: { action_id?: unknown; value?: unknown; action_ts?: unknown }[];
  };
  const action = payload.actions?.[0];
  const actionId = str(action?.action_id);
  if (actionId === undefined || !new RegExp(`^${repoActionPrefix}\\d+$`).test(actionId)) return undefined;
  const channel = str(payload.container?.channel_id);
  const statusTs = str(payload.container?.message_ts);
  const user = str(payload.user?.id);
  const value = typeof action?.value === 'string' ? action.value : undefined;
  if (channel === undefined || statusTs === undefined || user === undefined || value === undefined) return undefined;
  const actionTs = str(action?.action_ts) ?? '';
  return {
    key: `click:${channel}:${statusTs}:${user}:${actionTs}`,
    record: { kind: 'click', channel, statusTs, user, value: value.slice(0, 2_000), actionTs },
  };
}

function readMessage(body: Record<string, unknown>): { key: string; record: SlackRecord } | undefined {
  const event = (body.event ?? {}) as EventFields;
  const botUserId = str((body.authorizations as { user_id?: unknown }[] | undefined)?.[0]?.user_id);
  const direct =
    event.type === 'message' &&
    event.channel_type === 'im' &&
    (event.subtype === undefined || event.subtype === 'file_share');
  // Channel messages arrive as app_mention; only direct messages start work as `message`.
  if (event.type !== 'app_mention' && !direct) return undefined;
  if (event.type === 'app_mention' && event.subtype !== undefined) return undefined;
  const user = str(event.user);
  const channel = str(event.channel);
  const ts = str(event.ts);
  if (
    event.bot_id !== undefined ||
    user === undefined ||
    user === botUserId ||
    channel === undefined ||
    ts === undefined
  )
    return undefined;
  const threadTs = str(event.thread_ts);
  const record: SlackRecord = {
    kind: 'message',
    channel,
    ts,
    user,
    text: typeof event.text === 'string' ? event.text : '',
    files: Array.isArray(event.files) ? event.files.length : 0,
    ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
    ...(botUserId === undefined ? {} : { botUserId }),
  };
  return { key: `msg:${channel}:${ts}`, record };
}

/**
 * A Bolt receiver that records before it acknowledges. Bolt acks an event before any
 * listener runs, so the record cannot be written in a listener: this wrapper sits between
 * the receiver (which has verified the signature, or holds the Socket Mode envelope) and
 * the app. A delivery that asks something is recorded in the inbox and only then acked; when
 * the record cannot be written it is not acked (HTTP: Bolt answers 500; Socket Mode: no
 * ack), so Slack delivers it again. Everything else goes to the app unchanged.
 */
export function recordingReceiver(inner: Receiver, inbox: Pick<Inbox, 'record'>): Receiver {
  return {
    init(app: App) {
      const processEvent = async (event: ReceiverEvent) => {
        const reading = readDelivery(event.body);
        if (reading === undefined) return app.processEvent(event);
        await inbox.record(reading.key, reading.record);
        await event.ack();
      };
      inner.init(
        new Proxy(app, {
          get: (target, name, receiver) =>
            name === 'processEvent' ? processEvent : Reflect.get(target, name, receiver),
        }),
      );
    },
    start: (...args: unknown[]) => (inner.start as (...a: unknown[]) => Promise<unknown>)(...args),
    stop: (...args: unknown[]) => (inner.stop as (...a: unknown[]) => Promise<unknown>)(...args),
  };
}

/** A record read back from the inbox; undefined when it is not one {@link readDelivery} wrote. */
export function slackRecordOf(event: unknown): SlackRecord | undefined {
  const r = (event ?? {}) as Partial<Record<string, unknown>>;
  const ok = (k: string) => typeof r[k] === 'string' && r[k] !== '';
  if (
    r.kind === 'message' &&
    ok('channel') &&
    ok('ts') &&
    ok('user') &&
    typeof r.text === 'string' &&
    typeof r.files === 'number'
  )
    return r as SlackRecord;
  if (r.kind === 'click' && ok('channel') && ok('statusTs') && ok('user') && typeof r.value === 'string')
    return r as SlackRecord;
  return undefined;
}
