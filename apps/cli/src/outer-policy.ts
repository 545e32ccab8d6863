import type { Config } from '@codefleet/config';
import { attemptWorstCaseMs, worstCaseWallTimeMs, type OuterPolicy } from '@codefleet/core';

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

/** The agents a config can run, by the name their section has. */
const agentSections = ['aider', 'claude', 'codex', 'gemini', 'ollama', 'command', 'script'] as const;

/**
 * The longest a job can take from its first attempt under this config: every attempt at its
 * own bound (the checks before the agent, both passes with every fix attempt of every
 * escalation tier, a DoD command; see attemptWorstCaseMs) plus the largest backoffs, or the
 * job budget when that is shorter (past it the job is stopped, whatever retries are left).
 * A repository's DoD commands are not in the config: one is counted.
 */
export function worstCaseMsOf(config: Config): number {
  const { agents } = config;
  const chains = [agents.escalation, ...Object.values(agents.chains)];
  const attempt = attemptWorstCaseMs({
    // Which agent a job runs is the job's choice: the slowest one allowed bounds it.
    agentTimeoutMs: Math.max(agents.timeout_seconds, ...agentSections.map((a) => agents[a].timeout_seconds)) * 1000,
    stepTimeoutMs: config.verification.step_timeout_seconds * 1000,
    maxFixAttempts: config.worker.max_fix_attempts,
    tiers: Math.max(1, ...chains.map((tiers) => tiers.length)),
    dodCommands: 1,
  });
  const worst = worstCaseWallTimeMs({ agentTimeoutMs: attempt, policy: outerPolicyOf(config) });
  return config.worker.job_budget_seconds === undefined
    ? worst
    : Math.min(worst, config.worker.job_budget_seconds * 1000);
}
