// The checks every platform's outbound policy (Slack, GitHub, LINE, the HTTP callback) runs
// where the policy is read: a bad value fails when the client is made, not as a hang later.
// Each platform keeps its own defaults and enforcement beside its client; this is the one
// place that says what a valid timeout and retry count are.

/** `ms` if it is a positive, finite number of milliseconds; else a RangeError naming the platform. */
export function checkedTimeoutMs(platform: string, ms: number, what = 'the request timeout'): number {
  if (!Number.isFinite(ms) || ms <= 0)
    throw new RangeError(`${platform}: ${what} must be a positive number of ms, got ${ms}`);
  return ms;
}

/** `n` if it is a whole number of at least `least`; else a RangeError naming the platform and the setting. */
export function checkedCount(platform: string, name: string, n: number, least: number): number {
  if (!Number.isInteger(n) || n < least)
    throw new RangeError(`${platform}: ${name} must be a whole number of ${least} or more, got ${n}`);
  return n;
}
