import { checkedCount, checkedTimeoutMs, classify } from '@codefleet/core';

/**
 * The HTTP callback's outbound policy: the timeout of one POST, how often a POST is tried
 * and the waits between tries, here and nowhere else. It is the one retry layer for
 * callbacks: the report above it tries once, under its deadline, whose signal stops both
 * the POST in flight and the waits.
 */
export interface CallbackOutbound {
  /** Per POST; a receiver that accepts the connection and never answers is given up after it. */
  timeoutMs: number;
  /** POSTs tried per report on a network error, 429 or 5xx. */
  tries: number;
  /** Waits between tries; default a real timer (tests pass their own). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Five tries 1 s, 2 s, 4 s, 8 s apart: a receiver restarting is waited out, within a report's deadline. */
const callbackOutbound: Readonly<CallbackOutbound> = Object.freeze({ timeoutMs: 10_000, tries: 5 });

/** The wait before try `attempt + 1`. */
const backoffMs = (attempt: number) => 1000 * 2 ** (attempt - 1);

const realSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/** The policy checked where it is read: a bad value fails when the requester is made, not as a hang. */
export function checkedCallbackOutbound(policy: Partial<CallbackOutbound>): CallbackOutbound {
  const merged = { ...callbackOutbound, ...policy };
  checkedTimeoutMs('callback', merged.timeoutMs, 'the POST timeout');
  checkedCount('callback', 'tries', merged.tries, 1);
  return merged;
}

/**
 * Runs `post` (one POST, given the signal that bounds it) under `policy`: each try has its
 * timeout, a transient failure is tried again after a backoff while tries are left and
 * `signal` has not aborted; the last failure is thrown. `onRetry` hears each retry.
 */
export async function withCallbackOutbound(
  policy: CallbackOutbound,
  post: (signal: AbortSignal) => Promise<void>,
  signal: AbortSignal | undefined,
  onRetry: (attempt: number, error: unknown) => void,
): Promise<void> {
  const sleep = policy.sleep ?? realSleep;
  for (let attempt = 1; ; attempt += 1) {
    const timeout = AbortSignal.timeout(policy.timeoutMs);
    try {
      return await post(signal === undefined ? timeout : AbortSignal.any([signal, timeout]));
    } catch (error) {
      if (classify(error).verdict !== 'transient' || attempt >= policy.tries || signal?.aborted === true) throw error;
      onRetry(attempt, error);
      await sleep(backoffMs(attempt), signal);
    }
  }
}
