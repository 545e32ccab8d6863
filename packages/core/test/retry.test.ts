import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { Classified } from '../src/classify.js';
import type { Backoff, OuterPolicy } from '../src/retry.js';
import {
  backoffDelayMs,
  decideOuter,
  defaultInnerPolicy,
  defaultOuterPolicy,
  maxBackoffDelayMs,
  shouldRetryInner,
  worstCaseWallTimeMs,
  attemptWorstCaseMs,
} from '../src/retry.js';

const transient: Classified = { code: 'network', verdict: 'transient', message: 'ECONNRESET' };
const permanent: Classified = { code: 'forge_rejected', verdict: 'permanent', message: '422' };
const never = (): number => {
  throw new Error('random must not be called');
};

describe('inner retries', () => {
  it('retries only agent-fixable failures, at most maxAttempts runs', () => {
    expect(defaultInnerPolicy).toEqual({ maxAttempts: 3 });
    expect(shouldRetryInner(defaultInnerPolicy, 1, 'agent_fixable')).toBe(true);
    expect(shouldRetryInner(defaultInnerPolicy, 2, 'agent_fixable')).toBe(true);
    expect(shouldRetryInner(defaultInnerPolicy, 3, 'agent_fixable')).toBe(false);
    expect(shouldRetryInner(defaultInnerPolicy, 1, 'transient')).toBe(false);
    expect(shouldRetryInner(defaultInnerPolicy, 1, 'permanent')).toBe(false);
    expect(shouldRetryInner({ maxAttempts: 0 }, 0, 'agent_fixable')).toBe(false);
  });
});

describe('backoff', () => {
  const exponential: Backoff = { strategy: 'exponential', baseMs: 1000, maxMs: 30_000, jitter: false };

  it('is fixed or capped exponential', () => {
    expect(backoffDelayMs({ strategy: 'fixed', delayMs: 10_000 }, 5, never)).toBe(10_000);
    expect([1, 2, 3, 4, 5, 6, 100].map((n) => backoffDelayMs(exponential, n, never))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000,
    ]);
    expect(backoffDelayMs({ ...exponential, baseMs: 0 }, 5000, never)).toBe(0);
  });

  it('keeps 0 as a real value', () => {
    expect(backoffDelayMs({ strategy: 'fixed', delayMs: 0 }, 1, never)).toBe(0);
    expect(
      decideOuter(
        { maxRetries: 0, backoff: { strategy: 'fixed', delayMs: 0 } },
        { attemptsMade: 1, error: transient },
        never,
      ),
    ).toMatchObject({ action: 'give_up' });
  });

  it('draws full jitter within [0, cap]', () => {
    const jittered: Backoff = { ...exponential, jitter: true };
    expect(backoffDelayMs(jittered, 3, () => 0)).toBe(0);
    expect(backoffDelayMs(jittered, 3, () => 0.5)).toBe(2000);
    expect(backoffDelayMs(jittered, 3, () => 0.999999999)).toBe(4000);
    expect(backoffDelayMs(jittered, 3, () => 7)).toBe(4000);
    expect(() => backoffDelayMs(jittered, 3, () => Number.NaN)).toThrow(RangeError);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (n, r) => {
          const delay = backoffDelayMs(jittered, n, () => r);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThanOrEqual(maxBackoffDelayMs(jittered, n));
        },
      ),
    );
  });

  it('rejects nonsense', () => {
    expect(() => backoffDelayMs(exponential, 0, never)).toThrow(RangeError);
    expect(() => backoffDelayMs(exponential, 1.5, never)).toThrow(RangeError);
    expect(() => backoffDelayMs({ strategy: 'fixed', delayMs: -1 }, 1, never)).toThrow(RangeError);
    expect(() => backoffDelayMs({ ...exponential, maxMs: Number.NaN }, 1, never)).toThrow(RangeError);
  });
});

describe('decideOuter', () => {
  it('retries transient errors with the fixed default backoff', () => {
    expect(defaultOuterPolicy).toEqual({ maxRetries: 3, backoff: { strategy: 'fixed', delayMs: 10_000 } });
    for (const attemptsMade of [1, 2, 3]) {
      expect(decideOuter(defaultOuterPolicy, { attemptsMade, error: transient }, never)).toEqual({
        action: 'retry',
        delayMs: 10_000,
      });
    }
  });

  it('gives up after maxRetries retries', () => {
    const decision = decideOuter(defaultOuterPolicy, { attemptsMade: 4, error: transient }, never);
    expect(decision.action).toBe('give_up');
    if (decision.action === 'give_up')
      expect(decision.reason).toContain('retries exhausted after 4 attempts (max_retries 3)');
  });

  it('never retries permanent or agent-fixable errors', () => {
    const decision = decideOuter(defaultOuterPolicy, { attemptsMade: 1, error: permanent }, never);
    expect(decision).toEqual({ action: 'give_up', reason: 'permanent error (forge_rejected) is not retried: 422' });
    const fixable: Classified = { code: 'test_failed', verdict: 'agent_fixable', message: 'x' };
    expect(decideOuter(defaultOuterPolicy, { attemptsMade: 1, error: fixable }, never).action).toBe('give_up');
  });

  it('waits at least as long as the other side asked', () => {
    const limited: Classified = { code: 'rate_limited', verdict: 'transient', message: '429', retryAfterMs: 60_000 };
    expect(decideOuter(defaultOuterPolicy, { attemptsMade: 1, error: limited }, never)).toEqual({
      action: 'retry',
      delayMs: 60_000,
    });
    const short: Classified = { ...limited, retryAfterMs: 1 };
    expect(decideOuter(defaultOuterPolicy, { attemptsMade: 1, error: short }, never)).toEqual({
      action: 'retry',
      delayMs: 10_000,
    });
  });

  it('uses the retry number for exponential backoff', () => {
    const policy: OuterPolicy = {
      maxRetries: 5,
      backoff: { strategy: 'exponential', baseMs: 100, maxMs: 1000, jitter: false },
    };
    const delays = [1, 2, 3, 4, 5].map((attemptsMade) =>
      decideOuter(policy, { attemptsMade, error: transient }, never),
    );
    expect(delays.map((d) => (d.action === 'retry' ? d.delayMs : -1))).toEqual([100, 200, 400, 800, 1000]);
  });

  it('rejects a zero attempt count', () => {
    expect(() => decideOuter(defaultOuterPolicy, { attemptsMade: 0, error: transient }, never)).toThrow(RangeError);
  });
});

describe('worstCaseWallTimeMs', () => {
  it('matches CW 3.3 for the defaults and a 600 s agent timeout', () => {
    expect(worstCaseWallTimeMs({ agentTimeoutMs: 600_000, policy: defaultOuterPolicy })).toBe(2_430_000);
  });

  it('sums capped exponential backoff, ignoring jitter', () => {
    const policy: OuterPolicy = {
      maxRetries: 4,
      backoff: { strategy: 'exponential', baseMs: 1000, maxMs: 5000, jitter: true },
    };
    // 5 attempts x 100 + 1000 + 2000 + 4000 + 5000
    expect(worstCaseWallTimeMs({ agentTimeoutMs: 100, policy })).toBe(12_500);
    const many: OuterPolicy = {
      maxRetries: 1_000_000,
      backoff: { strategy: 'exponential', baseMs: 1, maxMs: 4, jitter: false },
    };
    expect(worstCaseWallTimeMs({ agentTimeoutMs: 0, policy: many })).toBe(1 + 2 + 4 * 999_998);
  });

  it('is an upper bound of every actual decision sequence', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.boolean(),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (maxRetries, baseMs, maxMs, jitter, r) => {
          const policy: OuterPolicy = { maxRetries, backoff: { strategy: 'exponential', baseMs, maxMs, jitter } };
          let waited = 0;
          for (let attemptsMade = 1; ; attemptsMade += 1) {
            const decision = decideOuter(policy, { attemptsMade, error: transient }, () => r);
            if (decision.action === 'give_up') break;
            waited += decision.delayMs;
          }
          expect(waited).toBeLessThanOrEqual(worstCaseWallTimeMs({ agentTimeoutMs: 0, policy }));
        },
      ),
    );
  });

  it('refuses negative or NaN inputs', () => {
    expect(() => worstCaseWallTimeMs({ agentTimeoutMs: -1, policy: defaultOuterPolicy })).toThrow(RangeError);
    expect(() => worstCaseWallTimeMs({ agentTimeoutMs: Number.NaN, policy: defaultOuterPolicy })).toThrow(RangeError);
    expect(() => worstCaseWallTimeMs({ agentTimeoutMs: 1, policy: { ...defaultOuterPolicy, maxRetries: -1 } })).toThrow(
      RangeError,
    );
    expect(() =>
      worstCaseWallTimeMs({
        agentTimeoutMs: 1,
        policy: { maxRetries: 1, backoff: { strategy: 'fixed', delayMs: Number.NaN } },
      }),
    ).toThrow(RangeError);
  });
});

describe('attemptWorstCaseMs', () => {
  const shape = { agentTimeoutMs: 1000, stepTimeoutMs: 10, maxFixAttempts: 3, tiers: 1, dodCommands: 2 };

  it('counts the checks before the agent, both passes of every fix attempt and tier, and the DoD', () => {
    // 7 checks before; per fix attempt pass 1 = agent + 2 checks, pass 2 = agent + 5 checks.
    expect(attemptWorstCaseMs(shape)).toBe(70 + 3 * (1020 + 1050) + 20);
    expect(attemptWorstCaseMs({ ...shape, tiers: 2 })).toBe(70 + 2 * 3 * (1020 + 1050) + 20);
    expect(attemptWorstCaseMs({ ...shape, maxFixAttempts: 1, dodCommands: 0 })).toBe(70 + 1020 + 1050);
  });

  it('refuses nonsense', () => {
    expect(() => attemptWorstCaseMs({ ...shape, maxFixAttempts: 0 })).toThrow(RangeError);
    expect(() => attemptWorstCaseMs({ ...shape, tiers: 1.5 })).toThrow(RangeError);
    expect(() => attemptWorstCaseMs({ ...shape, stepTimeoutMs: Number.NaN })).toThrow(RangeError);
  });
});
