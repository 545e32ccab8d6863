import type { AgentRunResult, ModelCall } from '@codefleet/agents';
import type { AgentRun, ModelCallRecord } from '@codefleet/core';

// The run record's limits (core run.ts): an agent's report never makes a run unstorable.
const maxCalls = 500;
const cut = (text: string, max: number) => text.slice(0, max);
const money = (n: number | undefined) => (n !== undefined && Number.isFinite(n) && n >= 0 ? n : undefined);
const count = (n: number) => (Number.isFinite(n) && n >= 0 ? Math.round(n) : 0);

/**
 * The model, cost, model calls and tier of one agent run, for its run-record entry. What an
 * agent reports is attacker data (a CLI prints its own model name and cost): strings are cut
 * to the record's lengths, numbers that are not finite and non-negative are dropped, and at
 * most 500 calls are kept (the first ones).
 */
export function agentRunCosts(
  result: AgentRunResult,
  tier: number | undefined,
): Pick<AgentRun, 'model' | 'cost_usd' | 'model_calls' | 'tier'> {
  const cost = money(result.costUsd);
  return {
    ...(result.model === undefined ? {} : { model: cut(result.model, 200) }),
    ...(cost === undefined ? {} : { cost_usd: cost }),
    ...(result.modelCalls === undefined
      ? {}
      : { model_calls: result.modelCalls.slice(0, maxCalls).map(modelCallRecord) }),
    ...(tier === undefined ? {} : { tier }),
  };
}

function modelCallRecord(call: ModelCall): ModelCallRecord {
  const cost = money(call.costUsd);
  return {
    provider: cut(call.provider, 64) || 'unknown',
    model: cut(call.model, 200),
    prompt_tokens: count(call.promptTokens),
    completion_tokens: count(call.completionTokens),
    latency_ms: count(call.latencyMs),
    ...(cost === undefined ? {} : { cost_usd: cost }),
    outcome: cut(call.outcome, 64) || 'unknown',
  };
}
