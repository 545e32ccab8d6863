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

/** Which of GitHub's rate limits refused a request. */
export type RateLimitKind = 'primary' | 'secondary';

/**
 * GitHub's rule for a secondary limit that names no time: wait at least one minute, and
 * longer (exponentially) while it keeps refusing; callers double from this floor.
 */
export const secondaryLimitFloorMs = 60_000;

/**
 * When GitHub says to try again: `retry-after` seconds (secondary limits), else the
 * primary limit's `x-ratelimit-reset` epoch seconds; undefined when neither is given.
 */
export function retryAfterMs(
  headers: Record<string, string | number | undefined>,
  now = Date.now(),
): number | undefined {
  const after = Number(headers['retry-after']);
  if (headers['retry-after'] !== undefined && Number.isFinite(after) && after >= 0) return after * 1_000;
  if (String(headers['x-ratelimit-remaining']) !== '0') return undefined;
  const reset = Number(headers['x-ratelimit-reset']);
  if (Number.isFinite(reset) && reset > 0) return Math.max(0, reset * 1_000 - now);
  return undefined;
}

/**
 * Which rate limit a refused request hit, by GitHub's documented rules: 403 or 429 with
 * `x-ratelimit-remaining: 0` is the primary limit (wait until `x-ratelimit-reset`); 403 or
 * 429 with `retry-after` or a message naming a secondary limit is a secondary one. A 429
 * says "too many requests" by its status alone, headers or not; a 403 needs one of the
 * signs, since 403 also means "forbidden".
 */
export function rateLimitOf(
  status: number,
  headers: Record<string, string | number | undefined>,
  message: string,
): RateLimitKind | undefined {
  if (status !== 403 && status !== 429) return undefined;
  if (String(headers['x-ratelimit-remaining']) === '0' && headers['retry-after'] === undefined) return 'primary';
  if (headers['retry-after'] !== undefined || /rate limit/i.test(message) || status === 429) return 'secondary';
  return undefined;
}

/**
 * Maps a failed GitHub API call to the taxonomy, in one place (STYLE 3): rate limits
 * ({@link rateLimitOf}) and 5xx are transient, with the time to wait in `retryAfterMs`
 * (a limit that names none waits {@link secondaryLimitFloorMs}; `details.waitNamed` false
 * tells a caller to double that while GitHub keeps refusing); 404 is `forge_not_found`; other 4xx are `forge_rejected`
 * (permanent); no response at all is `network`.
 */
export function githubFailure(operation: string, error: unknown): CodefleetError {
  if (error instanceof CodefleetError) return error;
  // GraphQL answers its refusals with 200 and an `errors` list: an answer, not a lost connection.
  const graphqlErrors = (error as { errors?: { type?: string; message?: string }[] } | undefined)?.errors;
  if (!isHttpFailure(error) && Array.isArray(graphqlErrors)) {
    const text = graphqlErrors.map((e) => e.message ?? e.type ?? '').join('; ');
    if (graphqlErrors.some((e) => e.type === 'RATE_LIMITED')) {
      return new CodefleetError('rate_limited', `GitHub ${operation}: GraphQL rate limit (${text}); retry in 60 s`, {
        verdict: 'transient',
        cause: error,
        retryAfterMs: secondaryLimitFloorMs,
        details: { rateLimit: 'primary', retryAfterMs: secondaryLimitFloorMs, waitNamed: false },
      });
    }
    return new CodefleetError('forge_rejected', `GitHub ${operation}: ${text}`, { verdict: 'permanent', cause: error });
  }
  if (!isHttpFailure(error)) {
    const message = error instanceof Error ? error.message : String(error);
    return new CodefleetError('network', `GitHub ${operation} failed without a response: ${message}`, {
      verdict: 'transient',
      cause: error,
    });
  }
  const headers = error.response?.headers ?? {};
  const { status } = error;
  const message = (error.response?.data as { message?: string } | undefined)?.message ?? error.message;
  const limit = rateLimitOf(status, headers, message);
  if (limit !== undefined) {
    const named = retryAfterMs(headers);
    // No time named (a secondary limit without retry-after, a primary one without reset): GitHub asks for a minute at least.
    const waitMs = named ?? secondaryLimitFloorMs;
    return new CodefleetError(
      'rate_limited',
      `GitHub ${operation}: ${limit} rate limit (${status}: ${message}); retry in ${Math.ceil(waitMs / 1_000)} s`,
      {
        // retryAfterMs on the error itself: the outer retry policy waits at least that long.
        verdict: 'transient',
        cause: error,
        retryAfterMs: waitMs,
        details: { status, rateLimit: limit, retryAfterMs: waitMs, waitNamed: named !== undefined },
      },
    );
  }
  if (status >= 500) {
    return new CodefleetError('forge_unavailable', `GitHub ${operation}: ${status} ${message}`, {
      verdict: 'transient',
      cause: error,
      details: { status },
    });
  }
  if (status === 404) {
    return new CodefleetError('forge_not_found', `GitHub ${operation}: not found (404: ${message})`, {
      verdict: 'permanent',
      cause: error,
      details: { status },
    });
  }
  return new CodefleetError('forge_rejected', `GitHub ${operation}: ${status} ${message}`, {
    verdict: 'permanent',
    cause: error,
    details: { status },
  });
}
