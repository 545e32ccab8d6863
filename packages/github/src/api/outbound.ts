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
  const timeoutMs = checkedTimeoutMs('github', policy.timeoutMs);
  octokit.hook.before('request', (options) => {
    const own = options.request?.signal as AbortSignal | undefined;
    const timeout = AbortSignal.timeout(timeoutMs);
    options.request = { ...options.request, signal: own === undefined ? timeout : AbortSignal.any([own, timeout]) };
  });
}
