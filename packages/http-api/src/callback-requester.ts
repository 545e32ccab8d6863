import { classify, CodefleetError, truncateHead, type Job } from '@codefleet/core';
import { maskForPublishing, type Logger, type SecretSource } from '@codefleet/log';
import { plainReport, type Report, type Requester } from '@codefleet/requester';
import type { RunStore } from '@codefleet/store';
import { checkedCallbackOutbound, withCallbackOutbound, type CallbackOutbound } from './callback-outbound.js';
import { callbackUrlProblem } from './callback-url.js';
import { signCallback } from './signature.js';
import { callbackSentKey } from './request-keys.js';

/** Options of {@link createCallbackRequester}. */
export interface CallbackRequesterOptions {
  /** `http_api.callback_secret`: the HMAC key. */
  secret: string;
  /** `http_api.callback_hosts`: checked again before every POST, not only when the job was created. */
  hosts: readonly string[];
  log: Logger;
  fetch?: typeof fetch;
  /**
   * Where sent events are remembered, so a report told twice (a redelivered job) is POSTed
   * once; without it a repeat is POSTed again with the same event id.
   */
  sent?: Pick<RunStore, 'lookupRequest' | 'setRequest'>;
  secrets?: SecretSource;
  /** POSTs tried per report on a network error, 429 or 5xx; default the callback's outbound policy. */
  tries?: number;
  /** Waits between tries; default a real timer of 1 s, 2 s, 4 s … */
  sleep?: (ms: number) => Promise<void>;
  /** Seconds since the epoch, for the timestamp header; default the clock. */
  nowSeconds?: () => number;
  /** Per POST; default the callback's outbound policy. */
  timeoutMs?: number;
}

/** The JSON body of a completion webhook. */
export interface CallbackPayload {
  /** The report's kind: queued, started, finished, answered, failed, cancelled. */
  event: Report['kind'];
  job_id: string;
  /** queued, running, done, answered, failed, cancelled. */
  state: string;
  pr_url?: string;
  reason?: string;
  error_code?: string;
  answer?: string;
  cancelled_by?: string;
  /** The same words a chat user is told, plain text. */
  message: string;
}

const sentTtlMs = 30 * 24 * 60 * 60 * 1000;
/** A failure's reason can be a long output tail; the run record keeps all of it. */
const maxReasonChars = 4_000;

/** The payload of a report, secrets masked; `progress` is not sent (undefined). */
export function callbackPayload(
  report: Report,
  mask: (text: string) => string = (t) => t,
): CallbackPayload | undefined {
  if (report.kind === 'progress') return undefined;
  const plain = plainReport(report);
  const payload: CallbackPayload = {
    event: report.kind,
    job_id: report.job.id,
    state: plain.state,
    message: mask([plain.headline, ...plain.details].join('\n')),
  };
  if (report.kind === 'finished') payload.pr_url = report.pullRequest.url;
  if (report.kind === 'failed') {
    payload.reason = truncateHead(mask(report.reason), maxReasonChars);
    payload.error_code = report.error.code;
  }
  if (report.kind === 'answered') payload.answer = mask(report.answer);
  if (report.kind === 'cancelled') payload.cancelled_by = report.by;
  return payload;
}

/**
 * Reports API jobs that carry a `callback_url` by POSTing JSON ({@link CallbackPayload}) to
 * it, signed: `X-Codefleet-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`,
 * `X-Codefleet-Timestamp` (seconds) and `X-Codefleet-Event-Id` (`<job id>:<event>`, the
 * receiver's dedup key). Every report but `progress` is sent. Network errors, 429 and 5xx are
 * retried under the callback's outbound policy (callback-outbound.ts); other answers are `forge_rejected`.
 * Redirects are never followed (a 3xx is a refusal) and a host outside `hosts` is never
 * contacted, so the URL cannot be bent towards another service.
 */
export function createCallbackRequester(options: CallbackRequesterOptions): Requester {
  const sender: CallbackSender = {
    options,
    fetch: options.fetch ?? fetch,
    policy: checkedCallbackOutbound({
      ...(options.tries === undefined ? {} : { tries: options.tries }),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
    }),
    nowSeconds: options.nowSeconds ?? (() => Math.floor(Date.now() / 1000)),
  };
  return {
    kind: 'callback',
    handles: (job) => callbackUrlOf(job) !== undefined,
    report: (report, signal) => sendReport(sender, report, signal),
  };
}

/** What every report of one callback requester is sent with. */
interface CallbackSender {
  readonly options: CallbackRequesterOptions;
  readonly fetch: typeof fetch;
  readonly policy: CallbackOutbound;
  readonly nowSeconds: () => number;
}

function callbackUrlOf(job: Job): string | undefined {
  return job.source.kind === 'api' ? job.source.callback_url : undefined;
}

/** Sends one report: refused outside `hosts`, skipped when already sent, retried under the policy. */
async function sendReport(sender: CallbackSender, report: Report, signal?: AbortSignal): Promise<void> {
  const { options } = sender;
  const url = callbackUrlOf(report.job);
  const payload = callbackPayload(report, (text) => maskForPublishing(text, options.secrets));
  if (url === undefined || payload === undefined) return;
  const log = options.log.child({ job_id: report.job.id, report: report.kind });
  const problem = callbackUrlProblem(url, options.hosts);
  if (problem !== undefined) {
    log.warn({ event: 'callback.refused', reason: problem }, `callback not sent: ${problem}`);
    throw new CodefleetError('forge_rejected', `callback not sent: ${problem}`, { verdict: 'permanent' });
  }
  const eventId = `${report.job.id}:${report.kind}`;
  if ((await options.sent?.lookupRequest(callbackSentKey(eventId))) !== undefined) return;
  const body = JSON.stringify(payload);
  try {
    await withCallbackOutbound(
      sender.policy,
      (signal) => postOnce(sender, { url, body, eventId }, signal),
      signal,
      (attempt, error) =>
        log.info(
          { event: 'callback.retry', attempt, code: classify(error).code },
          'completion webhook failed; retrying',
        ),
    );
  } catch (error) {
    log.warn({ err: error, event: 'callback.failed', code: classify(error).code }, 'completion webhook not delivered');
    throw error;
  }
  await options.sent?.setRequest(callbackSentKey(eventId), '1', sentTtlMs);
}

/** One signed POST; any answer but 2xx throws, with the code its retry verdict follows from. */
async function postOnce(
  sender: CallbackSender,
  post: { url: string; body: string; eventId: string },
  signal: AbortSignal,
): Promise<void> {
  const timestamp = sender.nowSeconds();
  let response: Response;
  try {
    response = await sender.fetch(post.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'codefleet-callback/1',
        'x-codefleet-event-id': post.eventId,
        'x-codefleet-timestamp': String(timestamp),
        'x-codefleet-signature': signCallback(sender.options.secret, timestamp, post.body),
      },
      body: post.body,
      redirect: 'manual',
      signal,
    });
  } catch (cause) {
    throw new CodefleetError(
      'network',
      `callback POST failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      {
        cause,
      },
    );
  }
  await response.body?.cancel().catch(() => {});
  if (response.ok) return;
  const details = { status: response.status };
  if (response.status >= 300 && response.status < 400) {
    throw new CodefleetError('forge_rejected', `callback answered ${response.status}: redirects are not followed`, {
      details,
    });
  }
  if (response.status === 429) throw new CodefleetError('rate_limited', 'callback answered 429', { details });
  if (response.status >= 500)
    throw new CodefleetError('forge_unavailable', `callback answered ${response.status}`, { details });
  throw new CodefleetError('forge_rejected', `callback answered ${response.status}`, { details });
}
