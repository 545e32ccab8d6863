import type { Job } from '@codefleet/core';
import type { RunStore } from '@codefleet/store';
import type { WebClient } from '@slack/web-api';
import { platformError, slackError } from './errors.js';
import { stateReactions } from './status.js';
import { finalKey, markKey, statusKey } from './request-keys.js';

/** A job asked for in a Slack thread: where its messages go. */
export type SlackSource = Extract<Job['source'], { kind: 'chat' }>;

/** What the requester's writes share: the client, and where and how long they remember what they wrote. */
export interface SlackWrites {
  client: WebClient;
  store: Pick<RunStore, 'bindRequest' | 'setRequest' | 'releaseRequest' | 'lookupRequest'>;
  rememberMs: number;
}

/** Runs a Web API call, its failure turned into the platform's error. */
async function call<T>(operation: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw slackError(operation, error);
  }
}

/** Posts `text` as a reply in the job's thread; resolves its ts. */
async function post(writes: SlackWrites, source: SlackSource, text: string): Promise<string> {
  const sent = await call('chat.postMessage', () =>
    writes.client.chat.postMessage({
      channel: source.channel,
      thread_ts: source.thread_id,
      text,
      mrkdwn: true,
      unfurl_links: false,
      unfurl_media: false,
    }),
  );
  return sent.ts ?? '';
}

/** Edits the job's status message to `text`, posting one when the job has none (or it is gone). */
export async function ensureStatus(writes: SlackWrites, job: Job, source: SlackSource, text: string): Promise<void> {
  const { client, store } = writes;
  const key = statusKey(job.id);
  // A status message posted here (the producer's was deleted, or there was none) wins.
  const ts = (await store.lookupRequest(key)) ?? source.status_message_id;
  if (ts !== undefined && ts !== '') {
    try {
      await client.chat.update({ channel: source.channel, ts, text });
      return;
    } catch (error) {
      if (platformError(error) !== 'message_not_found') throw slackError('chat.update', error);
    }
  }
  await store.setRequest(key, await post(writes, source, text), writes.rememberMs);
}

/**
 * Leaves exactly one state reaction on the request's message, and calls Slack only when the
 * state changed. With no memory of a mark (the job's first), the request carries the
 * producer's receipt mark, the queued state's: that one is replaced, nothing else removed.
 */
export async function ensureMark(writes: SlackWrites, job: Job, source: SlackSource, name: string): Promise<void> {
  const { client, store } = writes;
  if (source.message_id === undefined) return;
  const key = markKey(job.id);
  const previous = (await store.lookupRequest(key)) ?? stateReactions.queued;
  if (previous === name) return;
  const target = { channel: source.channel, timestamp: source.message_id };
  try {
    await client.reactions.add({ ...target, name });
  } catch (error) {
    if (platformError(error) !== 'already_reacted') throw slackError('reactions.add', error);
  }
  try {
    await client.reactions.remove({ ...target, name: previous });
  } catch (error) {
    if (platformError(error) !== 'no_reaction') throw slackError('reactions.remove', error);
  }
  await store.setRequest(key, name, writes.rememberMs);
}

/** Posts the final reply once per job and kind; a failed post releases the claim so a retry can post. */
export async function ensureFinal(
  writes: SlackWrites,
  job: Job,
  source: SlackSource,
  kind: string,
  text: string,
): Promise<void> {
  const { store } = writes;
  const key = finalKey(job.id, kind);
  const claim = await store.bindRequest(key, 'posting', writes.rememberMs);
  if (!claim.bound) return;
  try {
    await store.setRequest(key, await post(writes, source, text), writes.rememberMs);
  } catch (error) {
    await store.releaseRequest(key);
    throw error;
  }
}
