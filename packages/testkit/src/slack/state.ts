/**
 * What the Slack STAND-IN remembers: every message in every channel with its edits and
 * reactions, as a Slack client would show it. Pure bookkeeping; the wire protocol lives in
 * web-api.ts (HTTP) and socket-mode.ts (WebSocket).
 */

/** One message as the stand-in holds it. */
export interface SlackStandInMessage {
  channel: string;
  ts: string;
  /** The thread's root ts, for a reply; absent on a root message. */
  thread_ts?: string;
  /** The author: a user id, or the bot's user id for messages the app posted. */
  user: string;
  /** Set on messages the app posted. */
  bot_id?: string;
  /** The text as it reads now (after edits). */
  text: string;
  /** Block Kit blocks as they read now, when the message has any. */
  blocks?: unknown[];
  /** Earlier texts, oldest first: one entry per `chat.update`. */
  edits: string[];
  /** Reaction name → user ids who reacted, in order. */
  reactions: Record<string, string[]>;
}

/** Slack's message timestamps: seconds and a 6-digit sequence, unique per channel. */
function createTsClock(start = 1_790_000_000): () => string {
  let n = 0;
  return () => {
    n += 1;
    return `${start + Math.floor(n / 1000)}.${String(n % 1000).padStart(6, '0')}`;
  };
}

export class SlackState {
  readonly #messages = new Map<string, SlackStandInMessage>();
  readonly #nextTs = createTsClock();
  /** Channels deleted or never shared with the app: `channel_not_found`. */
  readonly gone = new Set<string>();

  knows(channel: string): boolean {
    return /^[CDG][A-Z0-9]{2,}$/.test(channel) && !this.gone.has(channel);
  }

  add(message: Omit<SlackStandInMessage, 'ts' | 'edits' | 'reactions'>): SlackStandInMessage {
    const stored: SlackStandInMessage = { ...message, ts: this.#nextTs(), edits: [], reactions: {} };
    this.#messages.set(`${stored.channel}/${stored.ts}`, stored);
    return stored;
  }

  /** A message deleted (by its author or an admin): later calls naming it get `message_not_found`. */
  delete(channel: string, ts: string): boolean {
    return this.#messages.delete(`${channel}/${ts}`);
  }

  get(channel: string, ts: string): SlackStandInMessage | undefined {
    return this.#messages.get(`${channel}/${ts}`);
  }

  /** A thread as a client shows it: the root, then its replies, oldest first. */
  thread(channel: string, rootTs: string): SlackStandInMessage[] {
    return [...this.#messages.values()]
      .filter((m) => m.channel === channel && (m.ts === rootTs || m.thread_ts === rootTs))
      .sort((a, b) => a.ts.localeCompare(b.ts));
  }

  all(): SlackStandInMessage[] {
    return [...this.#messages.values()].sort((a, b) => a.ts.localeCompare(b.ts));
  }
}
