import { formatUsd, type RunRecord, type TierRecord } from '@codefleet/core';
import { escapeInline, table } from '@codefleet/forge';

// What the task note (the PR body) says about an escalation chain: which tier solved the
// task, after which tiers gave up and why, and what each one cost.

/** `local-7b (ollama qwen2.5-coder:7b)`; a tier that names an agent itself without a model is just its name. */
function tierLabel(tier: Pick<TierRecord, 'profile' | 'agent' | 'model'>): string {
  const runs = [tier.agent, ...(tier.model === undefined ? [] : [tier.model])].join(' ');
  return runs === tier.profile ? tier.profile : `${tier.profile} (${runs})`;
}

function why(tier: TierRecord): string {
  switch (tier.outcome) {
    case 'failed':
      return 'exhausted its fix attempts';
    case 'budget_exceeded':
      return `spent its budget${tier.cost_usd === undefined ? '' : ` (${formatUsd(tier.cost_usd)})`}`;
    case 'error':
      return 'stopped on an error';
    case 'succeeded':
      return 'succeeded';
    case undefined:
      return 'did not finish';
  }
}

function listed(parts: readonly string[]): string {
  return parts.length <= 1 ? (parts[0] ?? '') : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1) ?? ''}`;
}

/**
 * One sentence on the chain: "Solved by tier 2 of 3: local-7b (ollama qwen2.5-coder:7b) after
 * tier 1 local-1.5b exhausted its fix attempts", or which tiers tried and how each ended.
 * Undefined for a job that ran no chain. Names are escaped: they come from the config, but
 * the note is Markdown.
 */
export function tierSummary(run: Pick<RunRecord, 'tiers' | 'chain'>): string | undefined {
  const tiers = run.tiers ?? [];
  if (tiers.length === 0) return undefined;
  const of = run.chain?.tiers.length ?? Math.max(...tiers.map((t) => t.tier + 1));
  const name = (t: TierRecord) => `tier ${t.tier + 1} ${escapeInline(t.profile, 64)}`;
  const solved = tiers.find((t) => t.outcome === 'succeeded');
  const before = tiers.filter((t) => solved === undefined || t.tier < solved.tier).map((t) => `${name(t)} ${why(t)}`);
  if (solved === undefined) return `No tier of ${of} solved it: ${listed(before)}.`;
  const by = `Solved by tier ${solved.tier + 1} of ${of}: ${escapeInline(tierLabel(solved), 200)}`;
  return before.length === 0 ? by : `${by} after ${listed(before)}`;
}

/** The `Escalation` section: the sentence above and a row per tier with its outcome and cost. */
export function tierSection(run: Pick<RunRecord, 'tiers' | 'chain'>): string | undefined {
  const summary = tierSummary(run);
  if (summary === undefined) return undefined;
  const rows = (run.tiers ?? []).map((t) => [
    String(t.tier + 1),
    escapeInline(t.profile, 64),
    escapeInline(t.agent, 64),
    t.model === undefined ? '–' : escapeInline(t.model, 120),
    t.outcome ?? 'running',
    t.cost_usd === undefined ? '–' : formatUsd(t.cost_usd),
  ]);
  const chain = run.chain === undefined ? '' : ` (chain \`${escapeInline(run.chain.name, 64)}\`)`;
  return `## Escalation${chain}\n\n${summary}\n\n${table(['Tier', 'Profile', 'Agent', 'Model', 'Outcome', 'Cost'], rows)}`;
}
