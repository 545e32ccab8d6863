import { formatDuration, formatUsd, runCostUsd, type AgentRun, type RunRecord } from '@codefleet/core';
import { html, type Html } from '../html.js';

// The money side of a run page: per agent run its model, tokens, cost and model calls; the
// run's total; the escalation tiers. Model names, outcomes and tier details come from
// agents and are escaped like everything else (`html`).

const usd = (amount: number | undefined) => (amount === undefined ? 'unknown' : formatUsd(amount));

/** ` · model … · 1200 in / 300 out tokens · $0.0021 · tier 1` for an agent run's summary line. */
export function agentRunFacts(a: AgentRun): Html {
  return html`${a.model === undefined ? '' : html` · model <code>${a.model}</code>`}${a.tokens === undefined ? '' : html` · ${a.tokens.prompt} in / ${a.tokens.completion} out tokens`}${a.cost_usd === undefined ? '' : html` · <span class="cost">${formatUsd(a.cost_usd)}</span>`}${a.tier === undefined ? '' : html` · tier ${a.tier}`}`;
}

/** An agent run's model calls as a table; nothing when the agent recorded none. */
export function modelCallsTable(a: AgentRun): Html | string {
  const calls = a.model_calls ?? [];
  if (calls.length === 0) return '';
  return html`<table class="model-calls"><thead><tr><th>Provider</th><th>Model</th><th>Tokens in</th><th>Tokens out</th><th>Latency</th><th>Cost</th><th>Outcome</th></tr></thead>
<tbody>${calls.map((c) => html`<tr><td>${c.provider}</td><td><code>${c.model}</code></td><td>${c.prompt_tokens}</td><td>${c.completion_tokens}</td><td>${formatDuration(c.latency_ms)}</td><td>${usd(c.cost_usd)}</td><td>${c.outcome}</td></tr>`)}</tbody></table>`;
}

/** ` · cost $0.1045` for the summary, saying when some agent runs had no known cost. */
export function runCostText(run: RunRecord): Html | string {
  const total = runCostUsd(run);
  if (total === undefined) return '';
  const unpriced = run.agent_runs.filter((a) => a.cost_usd === undefined).length;
  return html` · cost <strong class="cost">${formatUsd(total)}</strong>${unpriced === 0 ? '' : ` (${unpriced} agent run(s) without a known cost not included)`}`;
}

/** The escalation tiers the job ran (agents.escalation); nothing when it ran no chain. */
export function tiersSection(run: RunRecord): Html | string {
  if (run.tiers === undefined || run.tiers.length === 0) return '';
  return html`<section>
<h2>Escalation tiers</h2>
<table class="tiers"><thead><tr><th>Tier</th><th>Profile</th><th>Agent</th><th>Outcome</th><th>Cost</th><th>Detail</th></tr></thead>
<tbody>${run.tiers.map((t) => html`<tr><td>${t.tier}</td><td>${t.profile}</td><td>${t.agent}${t.model === undefined ? '' : html` <code>${t.model}</code>`}</td><td>${t.outcome ?? 'running'}</td><td>${usd(t.cost_usd)}</td><td>${t.detail ?? ''}</td></tr>`)}</tbody></table>
</section>`;
}
