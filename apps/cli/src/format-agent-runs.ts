import { formatDuration, formatUsd, runCostUsd, type AgentRun, type RunRecord } from '@codefleet/core';

/** Model calls `show` lists per agent run before it only counts the rest. */
const maxShownCalls = 10;

/**
 * `codefleet show`'s "Agent runs:" section: each run's facts, then its model, tokens, cost
 * and tier, then its model calls (provider, model, tokens in/out, latency, cost, outcome);
 * the run's total cost, and the escalation tiers when the job ran a chain. Lines are made
 * terminal-safe by the caller (the model names and details come from agents).
 */
export function agentRunLines(run: Pick<RunRecord, 'agent_runs' | 'tiers'>): string[] {
  const lines = ['Agent runs:'];
  for (const a of run.agent_runs) {
    lines.push(
      `  ${a.pass.padEnd(9)} attempt ${a.attempt}.${a.inner_attempt}  ${a.outcome.padEnd(10)} exit ${a.exit_code ?? a.signal}  ${formatDuration(a.duration_ms)}  ${a.changed_files.length} file(s)`,
    );
    const facts = modelFacts(a);
    if (facts !== '') lines.push(`      ${facts}`);
    const calls = a.model_calls ?? [];
    lines.push(
      ...calls
        .slice(0, maxShownCalls)
        .map(
          (c) =>
            `      call ${c.provider} ${c.model}  in ${c.prompt_tokens} out ${c.completion_tokens}  ${formatDuration(c.latency_ms)}  ${c.cost_usd === undefined ? 'cost unknown' : formatUsd(c.cost_usd)}  ${c.outcome}`,
        ),
    );
    if (calls.length > maxShownCalls) lines.push(`      … and ${calls.length - maxShownCalls} more call(s)`);
  }
  const total = runCostUsd(run);
  if (total !== undefined) {
    const unpriced = run.agent_runs.filter((a) => a.cost_usd === undefined).length;
    lines.push(
      `  total cost ${formatUsd(total)}${unpriced > 0 ? ` (${unpriced} agent run(s) without a known cost not included)` : ''}`,
    );
  }
  if (run.tiers !== undefined && run.tiers.length > 0) {
    lines.push('', 'Escalation tiers:');
    lines.push(
      ...run.tiers.map(
        (t) =>
          `  tier ${t.tier}  ${t.profile} (${t.agent}${t.model ? ` ${t.model}` : ''})  ${t.outcome ?? 'running'}${t.cost_usd === undefined ? '' : `  ${formatUsd(t.cost_usd)}`}${t.detail ? `  — ${t.detail}` : ''}`,
      ),
    );
  }
  return lines;
}

/** `model qwen2.5-coder:7b · tokens 1200 in / 300 out · $0.0021 · tier 1`; empty when the agent told none of it. */
function modelFacts(a: AgentRun): string {
  const parts = [
    a.model === undefined ? undefined : `model ${a.model}`,
    a.tokens === undefined ? undefined : `tokens ${a.tokens.prompt} in / ${a.tokens.completion} out`,
    a.cost_usd === undefined ? undefined : formatUsd(a.cost_usd),
    a.tier === undefined ? undefined : `tier ${a.tier}`,
  ];
  return parts.filter((p): p is string => p !== undefined).join(' · ');
}
