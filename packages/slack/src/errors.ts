import { CodefleetError } from '@codefleet/core';

/** Slack `ok:false` errors that a retry of the same call may get past. */
const transientPlatformErrors = new Set([
  'ratelimited',
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
]);

interface SlackSdkError {
  code?: string;
  data?: { error?: string };
  retryAfter?: number;
  statusCode?: number;
  message?: string;
}

/**
 * The one place a `@slack/web-api` failure becomes a `CodefleetError`: network trouble is
 * `network`, a 5xx or Slack's internal errors `forge_unavailable`, a 429 `rate_limited`
 * (all transient), any other `ok:false` (invalid_auth, channel_not_found, msg_too_long, …)
 * `forge_rejected` (permanent), keeping Slack's error string in the message.
 */
export function slackError(operation: string, error: unknown): CodefleetError {
  const e = error as SlackSdkError;
  const slackCode = e.data?.error;
  if (e.code === 'slack_webapi_rate_limited_error' || slackCode === 'ratelimited') {
    return new CodefleetError(
      'rate_limited',
      `Slack ${operation}: rate limited${e.retryAfter === undefined ? '' : `; retry in ${e.retryAfter} s`}`,
      {
        verdict: 'transient',
        cause: error,
        ...(e.retryAfter === undefined ? {} : { retryAfterMs: e.retryAfter * 1000 }),
      },
    );
  }
  if (e.code === 'slack_webapi_request_error')
    return new CodefleetError('network', `Slack ${operation}: ${e.message ?? 'request failed'}`, {
      verdict: 'transient',
      cause: error,
    });
  if (e.code === 'slack_webapi_http_error') {
    const status = e.statusCode ?? 0;
    return new CodefleetError(
      status >= 500 ? 'forge_unavailable' : 'forge_rejected',
      `Slack ${operation}: HTTP ${status}`,
      { verdict: status >= 500 ? 'transient' : 'permanent', cause: error },
    );
  }
  if (slackCode !== undefined && transientPlatformErrors.has(slackCode)) {
    return new CodefleetError('forge_unavailable', `Slack ${operation}: ${slackCode}`, {
      verdict: 'transient',
      cause: error,
    });
  }
  return new CodefleetError('forge_rejected', `Slack ${operation}: ${slackCode ?? e.message ?? 'failed'}`, {
    verdict: 'permanent',
    cause: error,
  });
}

/** The `ok:false` error string of a Web API failure, when it is one. */
export function platformError(error: unknown): string | undefined {
  return (error as SlackSdkError).data?.error;
}
