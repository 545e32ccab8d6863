import type { Classified } from './classify.js';
import type { Verdict } from './errors.js';

/** Inner (fix) retries: how many times one pass may run the agent. */
export interface InnerPolicy {
  /** Agent runs per pass, the first included (default 3). */
  maxAttempts: number;
}

/** CW's inner bound: at most 3 agent runs per pass. */
export const defaultInnerPolicy: Readonly<InnerPolicy> = Object.freeze({ maxAttempts: 3 });

/** Delay between outer attempts. */
export type Backoff =
  | { strategy: 'fixed'; delayMs: number }
  | {
      strategy: 'exponential';
      baseMs: number;
      maxMs: number;
      /** "Full jitter": a uniform delay in [0, capped exponential]. */
      jitter: boolean;
    };

/** Outer (transient) retries of a whole job. */
export interface OuterPolicy {
  /** Retries after the first attempt, so at most maxRetries + 1 attempts. */
  maxRetries: number;
  backoff: Backoff;
}

/** CW's outer policy: 3 retries, fixed 10 s backoff. */
export const defaultOuterPolicy: Readonly<OuterPolicy> = Object.freeze({
  maxRetries: 3,
  backoff: Object.freeze({ strategy: 'fixed', delayMs: 10_000 }),
});

/** What to do after a failed outer attempt. */
export type OuterDecision = { action: 'retry'; delayMs: number } | { action: 'give_up'; reason: string };

function requireCount(name: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min)
    throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
}

function requireDuration(name: string, value: number): void {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a finite number >= 0, got ${value}`);
}

function checkBackoff(backoff: Backoff): void {
  if (backoff.strategy === 'fixed') {
    requireDuration('backoff.delayMs', backoff.delayMs);
  } else {
    requireDuration('backoff.baseMs', backoff.baseMs);
    requireDuration('backoff.maxMs', backoff.maxMs);
  }
}

/**
 * True when the pass should run the agent again: only for failures the agent can fix,
 * and only while fewer than `maxAttempts` runs were made.
 */
export function shouldRetryInner(policy: InnerPolicy, attemptsMade: number, verdict: Verdict): boolean {
  return verdict === 'agent_fixable' && attemptsMade < policy.maxAttempts;
}

const maxExponent = 1000;

/** The largest delay `backoff` can produce before retry `retryNumber` (1-based). */
export function maxBackoffDelayMs(backoff: Backoff, retryNumber: number): number {
  requireCount('retryNumber', retryNumber, 1);
  checkBackoff(backoff);
  if (backoff.strategy === 'fixed') return backoff.delayMs;
  // Capping the exponent keeps 2^n finite, so baseMs = 0 gives 0 rather than NaN.
  const raw = backoff.baseMs * 2 ** Math.min(retryNumber - 1, maxExponent);
  return Math.min(backoff.maxMs, raw);
}

/**
 * Delay before retry `retryNumber` (1-based): fixed, or min(maxMs, baseMs * 2^(n-1)),
 * with full jitter drawing uniformly from [0, that]. `random` returns [0, 1).
 */
export function backoffDelayMs(backoff: Backoff, retryNumber: number, random: () => number): number {
  const cap = maxBackoffDelayMs(backoff, retryNumber);
  if (backoff.strategy === 'fixed' || !backoff.jitter) return cap;
  const r = random();
  if (!Number.isFinite(r)) throw new RangeError(`random() must return a number in [0, 1), got ${r}`);
  // Clamped so a sloppy random source can never push the delay past the cap.
  return Math.min(cap, Math.floor(Math.min(Math.max(r, 0), 1) * (cap + 1)));
}

/**
 * Decides after a failed outer attempt. Only transient errors are retried, up to
 * `maxRetries`; the delay honours the other side's Retry-After when that is longer.
 * `attemptsMade` counts the attempts already run, the failed one included (from 1).
 */
export function decideOuter(
  policy: OuterPolicy,
  state: { attemptsMade: number; error: Classified },
  random: () => number,
): OuterDecision {
  requireCount('attemptsMade', state.attemptsMade, 1);
  requireCount('maxRetries', policy.maxRetries, 0);
  const { error, attemptsMade } = state;
  if (error.verdict !== 'transient') {
    return { action: 'give_up', reason: `${error.verdict} error (${error.code}) is not retried: ${error.message}` };
  }
  const retriesMade = attemptsMade - 1;
  if (retriesMade >= policy.maxRetries) {
    const noun = attemptsMade === 1 ? 'attempt' : 'attempts';
    return {
      action: 'give_up',
      reason: `retries exhausted after ${attemptsMade} ${noun} (max_retries ${policy.maxRetries}); last error ${error.code}: ${error.message}`,
    };
  }
  const backoff = backoffDelayMs(policy.backoff, retriesMade + 1, random);
  const asked =
    error.retryAfterMs !== undefined && Number.isFinite(error.retryAfterMs) ? Math.max(0, error.retryAfterMs) : 0;
  return { action: 'retry', delayMs: Math.max(backoff, asked) };
}

/** What one outer attempt of a job may run, each piece at most its own timeout. */
export interface AttemptShape {
  /** The longest one agent run may take: the largest agent timeout in the config. */
  agentTimeoutMs: number;
  /** The timeout of one check (install, build, format, lint, test, a DoD command). */
  stepTimeoutMs: number;
  /** Inner attempts per pass (`worker.max_fix_attempts`): each an agent run and its checks. */
  maxFixAttempts: number;
  /** Escalation tiers a job may run in one attempt, each both passes again; 1 without a chain. */
  tiers: number;
  /** Definition-of-done commands run once the passes pass. */
  dodCommands: number;
}

/** Checks a pass-1 fix attempt runs (install, build), and a pass-2 one (install, build, format, lint, test). */
const pass1Checks = 2;
const pass2Checks = 5;
/** Before the first agent run: the package manager fetched, the install on the base and the base's baseline (five checks). */
const checksBeforeAgent = 2 + pass2Checks;

/**
 * Upper bound on one outer attempt's wall time: the checks before the agent, then for each
 * tier both passes with every fix attempt (an agent run and its checks, pass 2 running all
 * five), then the DoD commands, each at its full timeout. Preparing and publishing are git
 * and forge calls with deadlines of their own (minutes at most), not counted. Throws
 * RangeError on negative, fractional or NaN inputs.
 */
export function attemptWorstCaseMs(shape: AttemptShape): number {
  requireDuration('agentTimeoutMs', shape.agentTimeoutMs);
  requireDuration('stepTimeoutMs', shape.stepTimeoutMs);
  requireCount('maxFixAttempts', shape.maxFixAttempts, 1);
  requireCount('tiers', shape.tiers, 1);
  requireCount('dodCommands', shape.dodCommands, 0);
  const { agentTimeoutMs: agent, stepTimeoutMs: step } = shape;
  const pass1 = agent + pass1Checks * step;
  const pass2 = agent + pass2Checks * step;
  return checksBeforeAgent * step + shape.tiers * shape.maxFixAttempts * (pass1 + pass2) + shape.dodCommands * step;
}

/**
 * Upper bound on a job's wall time: (maxRetries + 1) attempts of
 * `agentTimeoutMs` each (one attempt's bound: {@link attemptWorstCaseMs}), plus the largest possible backoff before every retry (jitter
 * never exceeds the cap). `agentTimeoutMs` is the time budget of one attempt; a
 * Retry-After longer than the backoff is not bounded here. Throws RangeError on
 * negative, fractional or NaN inputs.
 */
export function worstCaseWallTimeMs(input: { agentTimeoutMs: number; policy: OuterPolicy }): number {
  const { agentTimeoutMs, policy } = input;
  requireDuration('agentTimeoutMs', agentTimeoutMs);
  requireCount('maxRetries', policy.maxRetries, 0);
  checkBackoff(policy.backoff);
  let total = (policy.maxRetries + 1) * agentTimeoutMs;
  for (let n = 1; n <= policy.maxRetries; n += 1) {
    const delay = maxBackoffDelayMs(policy.backoff, n);
    // Once the cap is reached every later retry waits the same; skip the long loop.
    const constant =
      policy.backoff.strategy === 'fixed' ||
      delay >= policy.backoff.maxMs ||
      policy.backoff.baseMs === 0 ||
      n > maxExponent;
    if (constant) {
      total += delay * (policy.maxRetries - n + 1);
      break;
    }
    total += delay;
  }
  return total;
}
