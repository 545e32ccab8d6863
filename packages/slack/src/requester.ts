import type { Job } from '@codefleet/core';
import { maskForPublishing, type Logger, type SecretSource } from '@codefleet/log';
import type { Report, Requester } from '@codefleet/requester';
import type { RunStore } from '@codefleet/store';
import type { WebClient } from '@slack/web-api';
import { platformError, slackError } from './errors.js';
import { renderReport, stateReactions } from './status.js';

/** Options of {@link createSlackRequester}. */
export interface SlackRequesterOptions {
  /** A Web API client holding the bot token (see `createSlackClient`). */
  client: WebClient;
  /** Where the requester remembers status messages, marks and sent final replies. */
  store: Pick<RunStore, 'bindRequest' | 'setRequest' | 'releaseRequest' | 'lookupRequest'>;
  /** Values masked out of everything sent. */
  secrets?: SecretSource;
  log?: Logger;
  /** How long the requester remembers a job's messages; default 30 days. */
  rememberMs?: number;
}

type SlackSource = Extract<Job['source'], { kind: 'chat' }>;

const slackSource = (job: Job): SlackSource | undefined =>
  job.source.kind === 'chat' && job.source.platform === 'slack' ? job.source : undefined;

/**
 * The requester for jobs asked for in a Slack thread. One status message per job, edited in
 * place (the producer's, `status_message_id`, or one posted on the first report), a
 * reaction on the request's message for where the job stands (one at a time, changed only
 * when the state changes), and each
 * final report posted once as a new reply so the user is notified. Request keys make it
 * idempotent: a redelivered job's reports converge on the same messages.
 */
export function createSlackRequester(options: SlackRequesterOptions): Requester {
  const { client, store } = options;
  const rememberMs = options.rememberMs ?? 30 * 24 * 3_600_000;
  const mask = (text: string) => maskForPublishing(text, options.secrets);

  const call = async <T>(operation: string, run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw slackError(operation, error);
    }
  };

  async function post(source: SlackSource, text: string): Promise<string> {
    const sent = await call('chat.postMessage', () =>
      client.chat.postMessage({
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
  async function ensureStatus(job: Job, source: SlackSource, text: string): Promise<void> {
    const key = `slack-status:${job.id}`;
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
    await store.setRequest(key, await post(source, text), rememberMs);
  }

  /**
   * Leaves exactly one state reaction on the request's message, and calls Slack only when the
   * state changed. With no memory of a mark (the job's first), the request carries the
   * producer's receipt mark, the queued state's: that one is replaced, nothing else removed.
   */
  async function ensureMark(job: Job, source: SlackSource, name: string): Promise<void> {
    if (source.message_id === undefined) return;
    const key = `slack-mark:${job.id}`;
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
    await store.setRequest(key, name, rememberMs);
  }

  /** Posts the final reply once per job and kind; a failed post releases the claim so a retry can post. */
  async function ensureFinal(job: Job, source: SlackSource, kind: string, text: string): Promise<void> {
    const key = `slack-final:${job.id}:${kind}`;
    const claim = await store.bindRequest(key, 'posting', rememberMs);
    if (!claim.bound) return;
    try {
      await store.setRequest(key, await post(source, text), rememberMs);
    } catch (error) {
      await store.releaseRequest(key);
      throw error;
    }
  }

  return {
    kind: 'slack',
    handles: (job) => slackSource(job) !== undefined,
    async report(report: Report, signal?: AbortSignal): Promise<void> {
      const source = slackSource(report.job);
      // `queued` is the producer's to say: it wrote the status message when it queued the job.
      if (source === undefined || report.kind === 'queued') return;
      const text = renderReport(report, mask);
      // Each write is tried even when an earlier one failed: a status edit refused must not
      // keep the final reply from arriving. The first failure is reported afterwards. The
      // Web API client takes no signal (its request timeout bounds each call): past the
      // deadline no further write starts.
      const failures: unknown[] = [];
      const attempt = async (write: () => Promise<void>) => {
        if (signal?.aborted === true) return void failures.push(signal.reason);
        await write().catch((error: unknown) => void failures.push(error));
      };
      await attempt(() => ensureStatus(report.job, source, text.status));
      await attempt(() => ensureMark(report.job, source, stateReactions[text.state]));
      const final = text.final;
      if (final !== undefined) await attempt(() => ensureFinal(report.job, source, report.kind, final));
      if (failures.length > 0) throw failures[0];
      options.log?.debug({ job: report.job.id, report: report.kind }, 'reported to Slack');
    },
  };
}
