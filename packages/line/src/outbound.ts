import { checkedCount, checkedTimeoutMs, classify } from '@codefleet/core';

/**
 * LINE's outbound policy: the timeout of one Messaging API call and how often a push is
 * tried, here and nowhere else. It is the one retry layer for LINE: the report above it
 * tries once, under its deadline, whose signal stops the call in flight and the waits.
 * A reply is never retried (its token is single use).
 */
export interface LineOutbound {
  /** Per request; a LINE API that accepts the connection and never answers is given up after it. */
  timeoutMs: number;
  /** Pushes tried per report on a transient failure (same retry key each time). */
  tries: number;
  /** Waits between tries; default a real timer (tests pass their own). */
  sleep?: (ms: number) => Promise<void>;
}

/** Three tries 1 s and 2 s apart (longer when a rate limit says so): a blip passes, an outage is not waited out. */
const lineOutbound: Readonly<LineOutbound> = Object.freeze({ timeoutMs: 15_000, tries: 3 });

/** The policy checked where it is read: a bad value fails when the client is made, not as a hang. */
export function checkedLineOutbound(policy: Partial<LineOutbound>): LineOutbound {
  const merged = { ...lineOutbound, ...policy };
  checkedTimeoutMs('line', merged.timeoutMs);
  checkedCount('line', 'tries', merged.tries, 1);
  return merged;
}

/** The signal one request runs under: the policy's timeout and the caller's deadline, whichever fires first. */
export function lineRequestSignal(policy: LineOutbound, signal?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(policy.timeoutMs);
  return signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
}

/**
 * Runs `send` under `policy`: a transient failure is tried again after a backoff (or what a
 * rate limit asks) while tries are left and `signal` has not aborted; `giveUpNow` says which
 * failures no wait can fix. The last failure is thrown.
 */
export async function withLineRetries(
  policy: LineOutbound,
  send: () => Promise<void>,
  signal: AbortSignal | undefined,
  giveUpNow: (error: unknown) => boolean,
): Promise<void> {
  const sleep = policy.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await send();
    } catch (error) {
      const c = classify(error);
      if (giveUpNow(error) || c.verdict !== 'transient' || attempt >= policy.tries || signal?.aborted === true)
        throw error;
      await sleep(Math.max(c.retryAfterMs ?? 0, 1000 * 2 ** (attempt - 1)));
    }
  }
}
