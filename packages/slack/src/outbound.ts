import type { WebClientOptions } from '@slack/web-api';
import { checkedCount, checkedTimeoutMs } from '@codefleet/core';

/**
 * Slack's outbound policy: every Web API client codefleet makes (the requester's and the
 * producer's Bolt app) gets its request timeout and its retries here, and nowhere else.
 * It is the one retry layer for Slack: callers above it (reports, the conversation) try once.
 */
export interface SlackOutbound {
  /** Per request; a Slack that accepts the connection and never answers is given up after it. */
  timeoutMs: number;
  /** Tries after the first, on a network error or 5xx; 0 for none. */
  retries: number;
}

/**
 * A few seconds per request and two retries with a short backoff: enough for a blip, and
 * bounded (about 40 s at worst) where the SDK's default is ten retries over half an hour.
 */
export const slackOutbound: Readonly<SlackOutbound> = Object.freeze({ timeoutMs: 10_000, retries: 2 });

/** The policy checked once where it is read: a bad value fails at start, not as a hang. */
function checked(policy: SlackOutbound): SlackOutbound {
  checkedTimeoutMs('slack', policy.timeoutMs);
  checkedCount('slack', 'retries', policy.retries, 0);
  return policy;
}

/**
 * The Web API client options that enforce {@link slackOutbound}. A 429 is not waited out
 * (`rejectRateLimitedCalls`): the SDK would pause every call of the client for the whole
 * Retry-After, the final reply behind a progress edit included. The rate-limited call fails
 * as `rate_limited` instead; a progress edit is replaced by the next one anyway.
 */
export function slackClientOptions(policy: SlackOutbound = slackOutbound): WebClientOptions {
  const { timeoutMs, retries } = checked(policy);
  return {
    timeout: timeoutMs,
    retryConfig: { retries, factor: 2, minTimeout: 500, maxTimeout: 5_000 },
    rejectRateLimitedCalls: true,
  };
}
