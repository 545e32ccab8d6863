import type { Job } from '@codefleet/core';
import { maskForPublishing, type Logger, type SecretSource } from '@codefleet/log';
import type { Report, Requester } from '@codefleet/requester';
import type { RunStore } from '@codefleet/store';
import type { WebClient } from '@slack/web-api';
import { ensureFinal, ensureMark, ensureStatus, type SlackSource, type SlackWrites } from './requester-writes.js';
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
  const writes: SlackWrites = {
    client: options.client,
    store: options.store,
    rememberMs: options.rememberMs ?? 30 * 24 * 3_600_000,
  };
  return {
    kind: 'slack',
    handles: (job) => slackSource(job) !== undefined,
    report: (report, signal) => reportToSlack(writes, options, report, signal),
  };
}

/** One report: the status message, the state reaction and, for a final report, the reply. */
async function reportToSlack(
  writes: SlackWrites,
  options: SlackRequesterOptions,
  report: Report,
  signal?: AbortSignal,
): Promise<void> {
  const source = slackSource(report.job);
  // `queued` is the producer's to say: it wrote the status message when it queued the job.
  if (source === undefined || report.kind === 'queued') return;
  const text = renderReport(report, (value: string) => maskForPublishing(value, options.secrets));
  // Each write is tried even when an earlier one failed: a status edit refused must not
  // keep the final reply from arriving. The first failure is reported afterwards. The
  // Web API client takes no signal (its request timeout bounds each call): past the
  // deadline no further write starts.
  const failures: unknown[] = [];
  const attempt = async (write: () => Promise<void>) => {
    if (signal?.aborted === true) return void failures.push(signal.reason);
    await write().catch((error: unknown) => void failures.push(error));
  };
  await attempt(() => ensureStatus(writes, report.job, source, text.status));
  await attempt(() => ensureMark(writes, report.job, source, stateReactions[text.state]));
  const final = text.final;
  if (final !== undefined) await attempt(() => ensureFinal(writes, report.job, source, report.kind, final));
  if (failures.length > 0) throw failures[0];
  options.log?.debug({ job: report.job.id, report: report.kind }, 'reported to Slack');
}
