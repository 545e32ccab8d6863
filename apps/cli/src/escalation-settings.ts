import type { AgentsConfig } from '@codefleet/config';
import type { PipelineSettings, TierSettings } from '@codefleet/pipeline';

/**
 * The escalation chains of the config as the pipeline takes them: `escalation` is
 * agents.escalation, beside agents.chains; and for every tier name, the agent and model it
 * runs (the profile's model, else the agent's own) and its money limit as a tier.
 */
export function escalationSettings(agents: AgentsConfig): Pick<PipelineSettings, 'chains' | 'tiers'> {
  const chains: Record<string, string[]> = { escalation: [...agents.escalation], ...agents.chains };
  const tiers: Record<string, TierSettings> = {};
  for (const name of new Set(Object.values(chains).flat())) {
    const profile = agents.profiles[name];
    const agent = profile?.agent ?? name;
    const model = profile?.model ?? modelOf(agents, agent);
    tiers[name] = {
      agent,
      ...(model === undefined ? {} : { model }),
      ...(profile?.budget_usd === undefined ? {} : { budgetUsd: profile.budget_usd }),
    };
  }
  return { chains, tiers };
}

/** The model an agent's own section names; command and script name none. */
function modelOf(agents: AgentsConfig, agent: string): string | undefined {
  switch (agent) {
    case 'aider':
    case 'claude':
    case 'codex':
    case 'gemini':
    case 'ollama':
      return agents[agent].model;
    default:
      return undefined;
  }
}
