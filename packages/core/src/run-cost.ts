import type { AgentRun, RunRecord } from './run.js';

/** US dollars as codefleet shows them everywhere: `$0.0123` (four decimals: a small model call costs fractions of a cent). */
export function formatUsd(amount: number): string {
  return `$${amount.toFixed(4)}`;
}

/**
 * What a run cost: the sum of its agent runs' `cost_usd`. Undefined when no agent run has a
 * cost, so an unknown cost never reads as free.
 */
export function runCostUsd(run: Pick<RunRecord, 'agent_runs'>): number | undefined {
  const priced = run.agent_runs.filter((a): a is AgentRun & { cost_usd: number } => a.cost_usd !== undefined);
  return priced.length === 0 ? undefined : priced.reduce((sum, a) => sum + a.cost_usd, 0);
}
