import type { Config } from '@codefleet/config';
import { worstCaseWallTimeMs, type OuterPolicy } from '@codefleet/core';

/** The outer retry policy `worker:` describes. */
export function outerPolicyOf(config: Config): OuterPolicy {
  const backoff = config.worker.backoff;
  return {
    maxRetries: config.worker.max_retries,
    backoff:
      backoff.strategy === 'fixed'
        ? { strategy: 'fixed', delayMs: backoff.delay_seconds * 1000 }
        : {
            strategy: 'exponential',
            baseMs: backoff.delay_seconds * 1000,
            maxMs: backoff.max_delay_seconds * 1000,
            jitter: backoff.jitter,
          },
  };
}

/**
 * The longest a job can take from its first attempt under this config: every attempt at the
 * agent timeout plus the largest backoffs, or the job budget when that is shorter (past it
 * the job is stopped, whatever retries are left).
 */
export function worstCaseMsOf(config: Config): number {
  const worst = worstCaseWallTimeMs({
    agentTimeoutMs: config.agents.timeout_seconds * 1000,
    policy: outerPolicyOf(config),
  });
  return config.worker.job_budget_seconds === undefined
    ? worst
    : Math.min(worst, config.worker.job_budget_seconds * 1000);
}
