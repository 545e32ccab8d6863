import type { LineConfig } from '@codefleet/config';
import { CodefleetError, type Job } from '@codefleet/core';
import { maskForPublishing, type Logger, type SecretSource } from '@codefleet/log';
import type { Report, Requester } from '@codefleet/requester';
import { createLineClient, isQuotaExhausted, retryKeyOf, type LineClient } from './client.js';
import { checkedLineOutbound, withLineRetries } from './outbound.js';
import { reportText } from './texts.js';

/** Options of {@link createLineRequester}. */
export interface LineRequesterOptions {
  /** `line:`; `channel_access_token` must be set unless `client` is given. */
  config: LineConfig;
  secrets?: SecretSource;
  log?: Logger;
  client?: LineClient;
  /** Pushes tried per report on a transient failure (same retry key each time); default LINE's outbound policy. */
  tries?: number;
  /** Waits between tries; default a real timer of 1 s, 2 s, … (tests pass their own). */
  sleep?: (ms: number) => Promise<void>;
}

/** The reports a LINE user is pushed: the final ones. */
const pushed = new Set<Report['kind']>(['finished', 'answered', 'failed', 'cancelled']);

/**
 * Reports LINE jobs (`source: {kind: 'chat', platform: 'line'}`) by push message to the
 * chat they came from (`source.channel`: a user, group or room id). Only final reports are
 * pushed: every push counts against the channel's monthly quota, and the acknowledgement was
 * already the free reply. Each push carries a retry key derived from the job id and the
 * report's kind, so a redelivered job or a retried push is sent once (LINE's 409 for a key
 * it accepted counts as sent). A used-up monthly quota (429 "monthly limit") is logged and
 * rejects as permanent `forge_rejected`; other 429s and 5xx are retried under LINE's outbound
 * policy (outbound.ts).
 */
export function createLineRequester(options: LineRequesterOptions): Requester {
  const token = options.config.channel_access_token;
  if (options.client === undefined && (token === undefined || token === '')) {
    throw new CodefleetError(
      'invalid_config',
      `the LINE requester needs the channel access token (${options.config.channel_access_token_env})`,
      { verdict: 'permanent' },
    );
  }
  const client = options.client ?? createLineClient({ apiUrl: options.config.api_url, accessToken: token ?? '' });
  const policy = checkedLineOutbound({
    ...(options.tries === undefined ? {} : { tries: options.tries }),
    ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
  });
  const handles = (job: Job) => job.source.kind === 'chat' && job.source.platform === 'line';

  const push = (to: string, text: string, retryKey: string, job: Job, kind: string, signal?: AbortSignal) =>
    withLineRetries(
      policy,
      () => client.push(to, [text], retryKey, signal),
      signal,
      (error) => {
        if (!isQuotaExhausted(error)) return false;
        options.log?.error(
          { err: error, event: 'line.quota_exhausted', job_id: job.id, report: kind },
          'LINE monthly push quota used up: the report was not sent (raise the plan or wait for the month to turn)',
        );
        return true;
      },
    );

  return {
    kind: 'line',
    handles,
    async report(report: Report, signal?: AbortSignal): Promise<void> {
      const { job } = report;
      if (!handles(job) || job.source.kind !== 'chat' || !pushed.has(report.kind)) return;
      const text = maskForPublishing(reportText(report), options.secrets);
      await push(job.source.channel, text, retryKeyOf('report', job.id, report.kind), job, report.kind, signal);
    },
  };
}
