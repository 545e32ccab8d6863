import { setTimeout as delay } from 'node:timers/promises';
import { backoffDelayMs, checkedCount, checkedTimeoutMs, maxBackoffDelayMs, type Backoff } from '@codefleet/core';
import { ModelCallError, modelErrorKind, type ChatOptions } from './chat-model.js';

/**
 * The model providers' outbound policy: the timeout of one HTTP request to a model server and
 * how often a failed request is tried again, here and nowhere else. Every provider (Ollama,
 * OpenAI-compatible, Anthropic) sends each request through {@link callUnderPolicy}. It is the
 * one retry layer for model calls: the built-in agent above it calls once, and a call that
 * still fails ends the agent run as an error, which the job's own outer retry
 * (`worker.max_retries`) may run again later like any transient failure of a job.
 */
export interface ModelCallPolicy {
  /** Per request; a server that accepts the connection and never answers is given up after it. */
  timeoutMs: number;
  /** Requests after the first on a transient failure (timeout, unreachable, 429, 5xx); 0 for none. */
  retries: number;
  /** Waits between requests; a longer Retry-After from the server wins. */
  backoff: Backoff;
  /** Waits, ended early when the caller's signal aborts; default a real timer (tests pass their own). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * Five minutes per request: a slow local model writing a whole patch still answers within it,
 * a server that never answers is left well before the run's own timeout (ten minutes by
 * default). Two retries 1 s and 2 s apart at most (full jitter): a restart or a reset passes.
 */
const defaultModelCallPolicy: Readonly<ModelCallPolicy> = Object.freeze({
  timeoutMs: 300_000,
  retries: 2,
  backoff: Object.freeze({ strategy: 'exponential', baseMs: 1_000, maxMs: 30_000, jitter: true }),
});

/** The policy checked where it is read: a bad value fails when the model is made, not as a hang. */
export function checkedModelCallPolicy(policy: Partial<ModelCallPolicy> = {}): ModelCallPolicy {
  const merged = { ...defaultModelCallPolicy, ...policy };
  checkedTimeoutMs('model provider', merged.timeoutMs);
  checkedCount('model provider', 'retries', merged.retries, 0);
  maxBackoffDelayMs(merged.backoff, 1); // throws on a bad backoff now rather than at the first retry
  return merged;
}

/** Failures another request may not meet: no answer in time, no connection, rate limited, a server error. */
export function isTransientModelError(error: unknown): boolean {
  const kind = modelErrorKind(error);
  if (kind === 'timeout' || kind === 'unreachable') return true;
  const status = (error as ModelCallError).status;
  return kind === 'server' && status !== undefined && (status === 429 || status >= 500);
}

const realSleep = (ms: number, signal: AbortSignal) => delay(ms, undefined, { signal }).catch(() => undefined as void);

/**
 * Runs `request` (one HTTP request of a provider, given the signal that bounds it) under
 * `policy`, `where` naming the server in messages:
 * 1. each request runs under the caller's signal and the request timeout, whichever fires first;
 * 2. one the caller stopped is `aborted` and never retried; one the timeout stopped is a
 *    transient `timeout`;
 * 3. a transient failure is tried again while retries are left, after core's backoff or the
 *    server's Retry-After when that is longer;
 * 4. a wait that would end past `call.deadline` is not started: the failure is thrown now;
 * 5. a caller abort during a wait ends the call as `aborted`, the last failure as its cause.
 */
export async function callUnderPolicy<T>(
  policy: ModelCallPolicy,
  where: string,
  call: Pick<ChatOptions, 'signal' | 'deadline'>,
  request: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const sleep = policy.sleep ?? realSleep;
  for (let retry = 1; ; retry += 1) {
    const timeout = AbortSignal.timeout(policy.timeoutMs);
    let failure: unknown;
    try {
      return await request(AbortSignal.any([call.signal, timeout]));
    } catch (error) {
      failure = stoppedBy(error, call.signal, timeout, where, policy.timeoutMs);
    }
    const wait = waitBeforeRetry(policy, failure, retry, call.deadline);
    if (wait === undefined) throw failure;
    await sleep(wait, call.signal);
    if (call.signal.aborted) {
      const last = failure instanceof Error ? failure.message : String(failure);
      throw new ModelCallError('aborted', `${where}: call aborted while waiting to retry (${last})`, {
        cause: failure,
      });
    }
  }
}

/** The failure as the policy sees it: the caller's abort and the request timeout told apart. */
function stoppedBy(error: unknown, caller: AbortSignal, timeout: AbortSignal, where: string, ms: number): unknown {
  if (caller.aborted)
    return modelErrorKind(error) === 'aborted'
      ? error
      : new ModelCallError('aborted', `${where}: call aborted`, { cause: error });
  if (timeout.aborted)
    return new ModelCallError('timeout', `${where} gave no complete answer within ${ms / 1000} s`, { cause: error });
  return error;
}

/** The wait before retry `retry` (1-based), or undefined when the failure is thrown instead. */
function waitBeforeRetry(
  policy: ModelCallPolicy,
  failure: unknown,
  retry: number,
  deadline: number | undefined,
): number | undefined {
  if (retry > policy.retries || !isTransientModelError(failure)) return undefined;
  const asked = (failure as ModelCallError).retryAfterMs ?? 0;
  const wait = Math.max(backoffDelayMs(policy.backoff, retry, Math.random), asked);
  return deadline !== undefined && Date.now() + wait >= deadline ? undefined : wait;
}
