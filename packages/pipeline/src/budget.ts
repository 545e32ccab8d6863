import { costOf, type Agent, type AgentRunResult } from '@codefleet/agents';
import { CodefleetError, formatUsd, type RunRecord } from '@codefleet/core';
import { utcDay, type SpendBy } from '@codefleet/store';
import type { PipelineDeps } from './deps.js';

// The job's budgets, checked before every agent run and after one that says it stopped for
// its budget: model tokens (agents.<name>.token_budget) and money (costs.budget_usd.job, an
// escalation tier's profiles.<name>.budget_usd, the fleet's costs.budget_usd.day).

/** Which money limit: the job's, its escalation tier's, or the whole fleet's UTC day. */
type BudgetScope = 'job' | 'tier' | 'day';

/** The money limits that apply to one agent run. */
export interface MoneyLimits {
  /** costs.budget_usd.job */
  jobUsd?: number | undefined;
  /** The tier's profiles.<name>.budget_usd, with its index in the chain (runs are recorded with it). */
  tierUsd?: number | undefined;
  tier?: number | undefined;
  /** costs.budget_usd.day */
  dayUsd?: number | undefined;
}

/** The money limits of the job's agent runs: the config's, and the escalation tier's when it runs as one. */
export function moneyLimits(input: {
  deps: Pick<PipelineDeps, 'settings'>;
  budget?: { tierUsd?: number; tier?: number } | undefined;
}): MoneyLimits {
  const { job, day } = input.deps.settings.budgetUsd ?? {};
  return { jobUsd: job, dayUsd: day, tierUsd: input.budget?.tierUsd, tier: input.budget?.tier };
}

/** One limit with what was spent against it. */
interface MoneySpent {
  scope: BudgetScope;
  spentUsd: number;
  limitUsd: number;
}

/** What is left before one agent run: tokens and dollars, each absent when there is no such budget. */
export interface BudgetsLeft {
  tokens?: number;
  usd?: number;
  /** The limit `usd` is what is left of (the tightest one). */
  binding?: MoneySpent;
}

const configKey: Record<BudgetScope, string> = {
  job: 'costs.budget_usd.job',
  tier: "the tier's profiles.<name>.budget_usd",
  day: 'costs.budget_usd.day',
};

/** `budget_exceeded` (permanent) saying what was spent of which limit; `details` keep the numbers. */
function moneyExceeded(spent: MoneySpent, agent?: string): CodefleetError {
  const which = spent.scope === 'day' ? "fleet's daily" : spent.scope === 'tier' ? 'escalation tier' : 'job';
  return new CodefleetError(
    'budget_exceeded',
    `${agent === undefined ? '' : `agent ${agent}: `}spent ${formatUsd(spent.spentUsd)} of the ${formatUsd(spent.limitUsd)} ${which} budget (${configKey[spent.scope]})`,
    {
      verdict: 'permanent',
      details: { scope: spent.scope, spent_usd: spent.spentUsd, limit_usd: spent.limitUsd },
    },
  );
}

/**
 * The run as the pipeline records it: its cost is what the agent reported, else its tokens
 * at the price of its model (the one it reports, else the one the config names for the
 * agent); unknown stays unknown, never free. A reported cost that is not a finite number ≥ 0
 * is attacker data and dropped.
 */
export function pricedRun(
  result: AgentRunResult,
  agent: Pick<Agent, 'model'>,
  prices: PipelineDeps['settings']['prices'],
): AgentRunResult {
  const model = result.model ?? agent.model;
  const reported =
    result.costUsd !== undefined && Number.isFinite(result.costUsd) && result.costUsd >= 0 ? result.costUsd : undefined;
  const cost =
    reported ?? (model === undefined || result.tokens === undefined ? undefined : costOf(prices, model, result.tokens));
  const { costUsd: _dropped, ...rest } = result;
  return { ...rest, ...(model === undefined ? {} : { model }), ...(cost === undefined ? {} : { costUsd: cost }) };
}

/** Dollars the job's agent runs cost so far, across deliveries; only `tier`'s runs when given. */
function costSpent(run: RunRecord, tier?: number): number {
  return run.agent_runs.reduce((sum, r) => sum + (tier !== undefined && r.tier !== tier ? 0 : (r.cost_usd ?? 0)), 0);
}

/** Model tokens the job's agent runs spent so far, across every delivery (the run record keeps them). */
function tokensSpent(run: RunRecord): number {
  return run.agent_runs.reduce((sum, r) => sum + (r.tokens ? r.tokens.prompt + r.tokens.completion : 0), 0);
}

/**
 * What is left of the agent's token budget before another run, or `undefined` when it has
 * none. A budget is exceeded when another model call is needed and nothing is left: the
 * job then ends as `budget_exceeded` (permanent, recorded like any failure), not a hang
 * and not another attempt.
 *
 * @throws {CodefleetError} `budget_exceeded` when the budget is spent.
 */
function tokenBudgetLeft(agent: Pick<Agent, 'name' | 'tokenBudget'>, run: RunRecord): number | undefined {
  if (agent.tokenBudget === undefined) return undefined;
  const spent = tokensSpent(run);
  if (spent < agent.tokenBudget) return agent.tokenBudget - spent;
  throw new CodefleetError(
    'budget_exceeded',
    `the job spent ${spent} model tokens, its budget is ${agent.tokenBudget} (agents.${agent.name}.token_budget)`,
    {
      verdict: 'permanent',
      details: { tokens_spent: spent, token_budget: agent.tokenBudget },
    },
  );
}

/** Each money limit that is set, with what was spent against it; the day's total read from the store's ledger. */
async function moneySpent(
  deps: Pick<PipelineDeps, 'store' | 'now'>,
  run: RunRecord,
  limits: MoneyLimits,
): Promise<MoneySpent[]> {
  const out: MoneySpent[] = [];
  if (limits.jobUsd !== undefined) out.push({ scope: 'job', spentUsd: costSpent(run), limitUsd: limits.jobUsd });
  if (limits.tierUsd !== undefined)
    out.push({ scope: 'tier', spentUsd: costSpent(run, limits.tier), limitUsd: limits.tierUsd });
  if (limits.dayUsd !== undefined) {
    const day = utcDay((deps.now ?? (() => new Date()))());
    out.push({ scope: 'day', spentUsd: await deps.store.spentOn(day), limitUsd: limits.dayUsd });
  }
  return out;
}

/**
 * What is left of every budget before another agent run: tokens and the least of the money
 * limits. A limit already reached ends the job here, before the run.
 *
 * @throws {CodefleetError} `budget_exceeded`: tokens (details `tokens_spent`, `token_budget`)
 *   or money (details `scope`, `spent_usd`, `limit_usd`).
 */
export async function budgetsLeft(
  deps: Pick<PipelineDeps, 'store' | 'now'>,
  agent: Pick<Agent, 'name' | 'tokenBudget'>,
  run: RunRecord,
  limits: MoneyLimits,
): Promise<BudgetsLeft> {
  const tokens = tokenBudgetLeft(agent, run);
  const spent = await moneySpent(deps, run, limits);
  const reached = spent.find((s) => s.spentUsd >= s.limitUsd);
  if (reached !== undefined) throw moneyExceeded(reached);
  const binding = spent.reduce<MoneySpent | undefined>(
    (least, s) => (least === undefined || s.limitUsd - s.spentUsd < least.limitUsd - least.spentUsd ? s : least),
    undefined,
  );
  return {
    ...(tokens === undefined ? {} : { tokens }),
    ...(binding === undefined ? {} : { usd: binding.limitUsd - binding.spentUsd, binding }),
  };
}

/**
 * Why a run that said it stopped for its budget stopped, after it was recorded: a money
 * limit now reached, else the token budget spent, else the limit it was given (what was
 * left was too little for another call).
 */
export async function budgetStop(
  deps: Pick<PipelineDeps, 'store' | 'now'>,
  agent: Pick<Agent, 'name' | 'tokenBudget'>,
  run: RunRecord,
  limits: MoneyLimits,
  before: BudgetsLeft,
  detail: string | undefined,
): Promise<CodefleetError> {
  const spent = await moneySpent(deps, run, limits);
  const reached =
    spent.find((s) => s.spentUsd >= s.limitUsd) ??
    (before.tokens === undefined ? spent.find((s) => s.scope === before.binding?.scope) : undefined);
  if (reached !== undefined) return moneyExceeded(reached, agent.name);
  return new CodefleetError(
    'budget_exceeded',
    `agent ${agent.name}: ${detail ?? 'token budget spent'} (agents.${agent.name}.token_budget)`,
    {
      verdict: 'permanent',
      details: {
        tokens_spent: tokensSpent(run),
        ...(agent.tokenBudget === undefined ? {} : { token_budget: agent.tokenBudget }),
      },
    },
  );
}

/**
 * Adds the run's cost to the fleet's day in the store's ledger, attributed to `by` (its
 * repository, agent and model: the dashboard's top spenders). Best effort: a store that
 * cannot take it is logged, and the day's total is then short by this run (the run record
 * still holds its cost); never a reason to fail the job.
 */
export async function recordSpend(
  deps: Pick<PipelineDeps, 'store' | 'now' | 'log'>,
  jobId: string,
  costUsd: number | undefined,
  by: SpendBy,
): Promise<void> {
  if (costUsd === undefined || costUsd <= 0) return;
  const day = utcDay((deps.now ?? (() => new Date()))());
  try {
    await deps.store.addSpend(day, costUsd, by);
  } catch (err) {
    deps.log.warn(
      { err, event: 'budget.ledger_failed', job_id: jobId, cost_usd: costUsd },
      "could not add the run's cost to the day's spend",
    );
  }
}
