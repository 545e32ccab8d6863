import type { JobRoute, RouteName } from '@codefleet/core';

/**
 * One message from a chat platform (or `codefleet chat`), as the platform's producer hands
 * it to the chat service. The text is untrusted: it is routed and snapshotted into a job,
 * never interpreted otherwise.
 */
export interface ChatMessage {
  /** `slack`, `line`, `cli`: becomes the job's `source.platform`. */
  platform: string;
  /** Where to answer: a channel (Slack), a user or group id (LINE). */
  channel: string;
  /** The conversation: a Slack thread's root ts (the message's own ts when it starts one). */
  thread: string;
  /** The message itself (Slack ts, LINE message id): what retries of one delivery share. */
  messageId: string;
  /** The platform's user id of the sender. */
  user: string;
  /** The text, with the bot's own mention taken out. */
  text: string;
  /**
   * What the producer knows about the sender: the GitHub login the platform user is mapped
   * to (config `<platform>.users`), and whether the user is on `<platform>.allowed_users`
   * (work on local repositories). Unmapped users may chat but not start work.
   */
  access: { login?: string; allowedLocal: boolean };
  /** Repositories the platform suggests, tried after `repo=` and the rules: the channel's, then the default. */
  repoHints: string[];
  /**
   * A repository the sender named outside the text (`codefleet chat --repo`): as strong as a
   * `repo=` word, which still wins when the text has one.
   */
  repo?: string;
  /** The status message the producer already posted for this request, edited as the job runs. */
  statusMessageId?: string;
  /** Route restrictions of the platform: LINE forces CHAT unless explicit /code is allowed. */
  policy?: { forceRoute?: RouteName; allowExplicitCode?: boolean };
  /**
   * The producer keeps a follow-up that has to wait for the thread's queued or running job
   * (`createFollowUpProcessor`) and queues it when that job ends:
   * such a message is answered `deferred`. Without it the message is turned back with a reply.
   */
  deferFollowUp?: boolean;
}

/** What the chat service did with a message; the producer tells the user. */
export type ChatOutcome =
  /** A job was queued (or this message's job already exists: `deduplicated`). */
  | { kind: 'enqueued'; jobId: string; route: JobRoute; deduplicated: boolean; repo: string }
  /** Answered at once (OPS, CHAT, a plain "no local model" refusal): `text` is plain text. */
  | { kind: 'reply'; text: string; route: JobRoute }
  /** No repository could be chosen: ask the user to pick one of `choices` (may be empty). */
  | { kind: 'ask_repo'; choices: string[]; route: JobRoute }
  /** The sender may not start this work; `text` says why, politely. */
  | { kind: 'refused'; text: string; route: JobRoute }
  /**
   * A CODE follow-up in the thread of job `jobId`, still queued or running: nothing was queued
   * yet; the producer keeps the message and hands it to the chat service again when it ends
   * (only for a message with `deferFollowUp`).
   */
  | { kind: 'deferred'; jobId: string; route: JobRoute; repo: string };

/** Routes chat messages and carries out the route. */
export interface ChatService {
  handle(message: ChatMessage): Promise<ChatOutcome>;
}
