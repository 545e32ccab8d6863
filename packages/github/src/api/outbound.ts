import type { Octokit } from '@octokit/rest';
import { checkedTimeoutMs } from '@codefleet/core';

/**
 * GitHub's outbound policy: the request timeout and retries of every call the GitHub client
 * makes, here and nowhere else. There are no retries inside the client: a forge write that
 * failed is retried by the job's own delivery (its writes are `ensure*`, so a retry
 * converges), and a retried POST whose first answer was lost could open a second comment.
 */
export interface GithubOutbound {
  /** Per request; a GitHub API that accepts the connection and never answers is given up after it. */
  timeoutMs: number;
}

/** Long enough for a large diff or a slow search, short of holding a job for minutes. */
const githubOutbound: Readonly<GithubOutbound> = Object.freeze({ timeoutMs: 30_000 });

/** The Octokit constructor's request options: no retries. */
export const githubRequestDefaults = { retries: 0 } as const;

/**
 * Enforces the timeout on every request of `octokit`: the call's own signal (a caller's
 * deadline) and the timeout, whichever fires first, abort the HTTP request.
 */
export function enforceGithubOutbound(octokit: Octokit, policy: GithubOutbound = githubOutbound): void {
  checkedTimeoutMs('github', policy.timeoutMs);
  octokit.hook.before('request', (options) => {
    const own = options.request?.signal as AbortSignal | undefined;
    options.request = { ...options.request, signal: githubSignal(own, policy) };
  });
}

/**
 * The signal of one GitHub request made without Octokit (the App token exchange, a job log
 * download): the policy's timeout, and `own` (a caller's deadline) when there is one.
 */
export function githubSignal(own?: AbortSignal, policy: GithubOutbound = githubOutbound): AbortSignal {
  const timeout = AbortSignal.timeout(checkedTimeoutMs('github', policy.timeoutMs));
  return own === undefined ? timeout : AbortSignal.any([own, timeout]);
}

/**
 * What a request that got no answer says about why: fetch's own message is "fetch failed";
 * the socket's code (ECONNRESET, UND_ERR_CONNECT_TIMEOUT) or the timeout's name is the news.
 */
export function noAnswerReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const detail = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : '';
  const message =
    error instanceof Error ? (error.name === 'TimeoutError' ? 'timed out' : error.message) : String(error);
  return detail === '' ? message : `${message} (${detail})`;
}
