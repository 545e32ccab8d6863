import { formatUsd as usd } from '@codefleet/core';
import type { PriceTable } from '../port.js';
import { costOf, priceOf } from '../pricing.js';
import type { ChatMessage } from './chat-model.js';

/** What a run has spent and may spend, as {@link allowance} reads it before each model call. */
export interface BudgetState {
  /** The next call's messages: what its prompt will be. */
  messages: readonly ChatMessage[];
  /** Tokens charged so far in this run (prompt and completion). */
  spentTokens: number;
  tokenBudget?: number | undefined;
  /** Money charged so far in this run (priced calls only). */
  spentUsd: number;
  budgetUsd?: number | undefined;
  prices?: PriceTable | undefined;
  model: string;
  /** The agent's own cap on a reply's tokens. */
  maxTokens?: number | undefined;
}

/**
 * What the budgets allow the next call: `refused` with the reason once a budget is spent or
 * when the prompt alone would overrun what is left; else the cap on the reply's tokens and
 * the prompt's estimated size, which a failed call is charged.
 *
 * A max-tokens cap bounds only the reply: the prompt is charged too, so what the reply may
 * use is what is left after the prompt. One whose prompt alone would overrun the budget is
 * not sent (the server counts a prompt it reads, whatever it answers). The money budget works
 * the same way for priced models, and the reply is capped at the tokens the rest buys.
 */
export function allowance(
  state: BudgetState,
): { refused: string } | { maxTokens: number | undefined; promptEstimate: number } {
  const { spentTokens: spent, spentUsd, prices, model } = state;
  const left = state.tokenBudget === undefined ? undefined : state.tokenBudget - spent;
  if (left !== undefined && left <= 0) return { refused: `token budget spent (${spent} tokens in this run)` };
  const promptEstimate = estimateTokens(state.messages.reduce((sum, m) => sum + m.content.length, 0));
  if (left !== undefined && promptEstimate >= left) {
    return {
      refused: `token budget too small for the prompt: about ${promptEstimate} prompt tokens, ${left} of the budget left (raise token_budget or lower context_tokens)`,
    };
  }
  const leftUsd = state.budgetUsd === undefined ? undefined : state.budgetUsd - spentUsd;
  if (leftUsd !== undefined && leftUsd <= 0)
    return { refused: `money budget spent (${usd(spentUsd)} of ${usd(state.budgetUsd ?? 0)} in this run)` };
  const promptUsd = costOf(prices, model, { prompt: promptEstimate, completion: 0 });
  if (leftUsd !== undefined && promptUsd !== undefined && promptUsd >= leftUsd) {
    return {
      refused: `money budget too small for the prompt: about ${usd(promptUsd)} for ${promptEstimate} prompt tokens of ${model}, ${usd(leftUsd)} left`,
    };
  }
  const price = priceOf(prices, model);
  const affordable =
    leftUsd === undefined || promptUsd === undefined || price === undefined || price.outputPerMtok <= 0
      ? undefined
      : Math.max(1, Math.floor(((leftUsd - promptUsd) * 1_000_000) / price.outputPerMtok));
  const caps = [state.maxTokens, left === undefined ? undefined : left - promptEstimate, affordable].filter(
    (n): n is number => n !== undefined,
  );
  return { maxTokens: caps.length > 0 ? Math.min(...caps) : undefined, promptEstimate };
}

/** Tokens for `chars` characters of text, estimated at about four characters a token. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}
