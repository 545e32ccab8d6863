/** How many failed logins are let through, per client address and in all. */
export interface LoginLimits {
  /** Failures one address may make within `windowMs`. */
  perClient: number;
  /** Failures all addresses together may make within `windowMs`. */
  global: number;
  windowMs: number;
}

/**
 * Ten failures an address, a hundred in all, per ten minutes: a person mistyping is not
 * stopped, a script trying tokens is stopped after seconds, and many addresses together
 * still try no more than 100 tokens in ten minutes.
 */
export const defaultLoginLimits: LoginLimits = { perClient: 10, global: 100, windowMs: 10 * 60_000 };

/** Addresses remembered at once; the oldest is forgotten first (an attacker with many addresses meets the global cap). */
const maxClients = 10_000;

/**
 * Failed logins (the form and bearer tokens alike) over a sliding window: once an address, or
 * everyone together, has failed as often as allowed, further tries are refused unchecked until
 * the oldest failure leaves the window. Successful logins cost nothing.
 */
export class LoginLimiter {
  private readonly byClient = new Map<string, number[]>();
  private readonly all: number[] = [];

  constructor(
    private readonly limits: LoginLimits,
    private readonly now: () => number,
  ) {}

  /** Milliseconds until `client` may try again; 0 when it may now. */
  waitMs(client: string): number {
    const now = this.now();
    const since = now - this.limits.windowMs;
    const mine = this.byClient.get(client) ?? [];
    dropBefore(mine, since);
    dropBefore(this.all, since);
    if (mine.length === 0) this.byClient.delete(client);
    const until = (failures: number[], limit: number) =>
      failures.length >= limit ? (failures[failures.length - limit] ?? now) + this.limits.windowMs - now : 0;
    return Math.max(until(mine, this.limits.perClient), until(this.all, this.limits.global), 0);
  }

  /** Counts a failed try of `client`. */
  failed(client: string): void {
    const now = this.now();
    let mine = this.byClient.get(client);
    if (mine === undefined) {
      if (this.byClient.size >= maxClients) this.byClient.delete(this.byClient.keys().next().value as string);
      mine = [];
      this.byClient.set(client, mine);
    }
    push(mine, now, this.limits.perClient);
    push(this.all, now, this.limits.global);
  }
}

/** Drops the times before `since` (they are in order). */
function dropBefore(times: number[], since: number): void {
  let n = 0;
  while (n < times.length && (times[n] ?? 0) <= since) n += 1;
  if (n > 0) times.splice(0, n);
}

/** Appends `time`, keeping only the last `limit`: older ones can no longer decide anything. */
function push(times: number[], time: number, limit: number): void {
  times.push(time);
  if (times.length > limit) times.splice(0, times.length - limit);
}
