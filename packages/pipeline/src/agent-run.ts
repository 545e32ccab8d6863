import type { Agent, AgentRunRequest } from '@codefleet/agents';
import type { BudgetsLeft } from './budget.js';
import type { PipelineDeps } from './deps.js';
import type { JobRunners } from './sandboxed.js';

/** What {@link agentRunSettings} fills in: everything of a run but its task. */
type RunSettings = Omit<AgentRunRequest, 'workdir' | 'prompt' | 'pass' | 'attempt' | 'feedback' | 'onOutput'>;

/**
 * What every agent run of a job is given besides its task: the job's signal, the agent's
 * deadline and environment, the sandboxed runner, git, and what is left of the budgets with
 * the prices to spend it by. One place, so a pass's run and an answer-mode run cannot drift.
 */
export function agentRunSettings(
  deps: PipelineDeps,
  agent: Agent,
  runners: JobRunners,
  left: BudgetsLeft,
  signal: AbortSignal | undefined,
): RunSettings {
  return {
    ...(signal === undefined ? {} : { signal }),
    timeoutMs: agent.timeoutMs ?? deps.settings.agentTimeoutMs,
    env: deps.settings.agentEnv(agent),
    runner: runners.runner,
    isolated: runners.isolated,
    ...(deps.settings.gitPath === undefined ? {} : { gitPath: deps.settings.gitPath }),
    ...(left.tokens === undefined ? {} : { tokenBudget: left.tokens }),
    ...(left.usd === undefined ? {} : { budgetUsd: left.usd }),
    ...(deps.settings.prices === undefined ? {} : { prices: deps.settings.prices }),
  };
}
