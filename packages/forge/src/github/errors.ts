import { CodefleetError } from '@codefleet/core';

/** An Octokit `RequestError` as far as this adapter reads it. */
interface HttpFailure {
  status: number;
  message: string;
  response?: { headers?: Record<string, string | number | undefined>; data?: unknown };
}

function isHttpFailure(error: unknown): error is HttpFailure {
  return typeof error === 'object' && error !== null && typeof (error as { status?: unknown }).status === 'number';
}

/**
 * When GitHub says to try again: `retry-after` seconds (secondary limits), else the
 * primary limit's `x-ratelimit-reset` epoch seconds; undefined when neither is given.
 */
export function retryAfterMs(headers: Record<string, string | number | undefined>, now = Date.now()): number | undefined {
  const after = Number(headers['retry-after']);
  if (Number.isFinite(after) && after >= 0) return after * 1_000;
  const reset = Number(headers['x-ratelimit-reset']);
  if (Number.isFinite(reset) && reset > 0) return Math.max(0, reset * 1_000 - now);
  return undefined;
}

/**
 * Maps a failed GitHub API call to the taxonomy, in one place (STYLE 3): rate limits
 * (primary: 403/429 with `x-ratelimit-remaining: 0`; secondary: 403/429 with
 * `retry-after` or a message saying so) and 5xx are transient, with the time to wait in
 * `details.retryAfterMs`; 404 is `forge_not_found`; other 4xx are `forge_rejected`
 * (permanent); no response at all is `network`.
 */
export function githubFailure(operation: string, error: unknown): CodefleetError {
  if (error instanceof CodefleetError) return error;
  if (!isHttpFailure(error)) {
    const message = error instanceof Error ? error.message : String(error);
    return new CodefleetError('network', `GitHub ${operation} failed without a response: ${message}`, { verdict: 'transient', cause: error });
  }
  const headers = error.response?.headers ?? {};
  const { status } = error;
  const message = (error.response?.data as { message?: string } | undefined)?.message ?? error.message;
  const limited = (status === 403 || status === 429)
    && (String(headers['x-ratelimit-remaining']) === '0' || headers['retry-after'] !== undefined || /rate limit/i.test(message));
  if (limited) {
    const waitMs = retryAfterMs(headers);
    return new CodefleetError('rate_limited', `GitHub ${operation}: rate limited (${status}: ${message})${waitMs === undefined ? '' : `; retry in ${Math.ceil(waitMs / 1_000)} s`}`, {
      // retryAfterMs on the error itself: the outer retry policy waits at least that long.
      verdict: 'transient', cause: error, ...(waitMs === undefined ? {} : { retryAfterMs: waitMs }),
      details: { status, ...(waitMs === undefined ? {} : { retryAfterMs: waitMs }) },
    });
  }
  if (status >= 500) {
    return new CodefleetError('forge_unavailable', `GitHub ${operation}: ${status} ${message}`, { verdict: 'transient', cause: error, details: { status } });
  }
  if (status === 404) {
    return new CodefleetError('forge_not_found', `GitHub ${operation}: not found (404: ${message})`, { verdict: 'permanent', cause: error, details: { status } });
  }
  return new CodefleetError('forge_rejected', `GitHub ${operation}: ${status} ${message}`, { verdict: 'permanent', cause: error, details: { status } });
}
