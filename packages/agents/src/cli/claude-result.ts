import { formatUsd } from '@codefleet/core';
import type { OutcomeFacts, OutcomeVerdict } from '../outcome.js';
import type { ModelCall, PriceTable } from '../port.js';
import { costOf } from '../pricing.js';
import type { RunReport } from '../process-agent.js';
import { apiErrorVerdict, capVerdict, endedOnItsOwn, firstMatchingLine, lastJsonObject } from './shared.js';

/**
 * How Claude Code (2.1.x) reports a print-mode run: one JSON object, `type: "result"`, on
 * stdout. Exit code 0 on success and 1 on every failure, and the object says which:
 * - `subtype: "error_max_turns"`: `--max-turns` stopped it (no `result` text, `errors` says so);
 * - `subtype: "error_max_budget_usd"`: `--max-budget-usd` stopped it, checked after each
 *   model call, so the last call may overshoot the budget;
 * - `is_error: true` with `subtype: "success"`: the API failed (`api_error_status`,
 *   `api_error_type`, the message in `result`), after the CLI's own retries;
 * - `modelUsage`: per model, the tokens (`inputTokens`, `outputTokens`,
 *   `cacheReadInputTokens`, `cacheCreationInputTokens`) and `costUSD` from the CLI's own price
 *   list; `total_cost_usd` is their sum. The top-level `usage` is not used: it is zero on a
 *   budget stop and counts a failed stream's tokens that `modelUsage` leaves out.
 */
export type ClaudeResult = Record<string, unknown> & { type: 'result' };

/**
 * The final result object in a run's output, if Claude Code printed one: the one JSON
 * object, or with `--verbose` the last element of the JSON array of every message it
 * prints instead (one line, whose start a long run pushes out of the tail).
 */
export function readClaudeResult(outputTail: string): ClaudeResult | undefined {
  const value = lastJsonObject(outputTail);
  if (value?.type === 'result') return value as ClaudeResult;
  const line = outputTail
    .trimEnd()
    .split('\n')
    .reverse()
    .find((l) => l.trimEnd().endsWith('}]'))
    ?.trimEnd();
  if (line === undefined) return undefined;
  // The last element starts at one of the last `,{"` (or at `[{"`); try them from the end.
  let at = line.length;
  for (let tries = 0; tries < 200; tries += 1) {
    at = Math.max(line.lastIndexOf(',{"', at - 1), line.lastIndexOf('[{"', at - 1));
    if (at < 0) return undefined;
    try {
      const element: unknown = JSON.parse(line.slice(at + 1, -1));
      if (typeof element === 'object' && element !== null && (element as { type?: unknown }).type === 'result')
        return element as ClaudeResult;
    } catch {
      // Not where the last element starts.
    }
  }
  return undefined;
}

// Printed in text mode, or as the result text, when the API refused or failed.
const apiErrorPatterns = [/^API Error\b/, /^Invalid API key/i, /^Credit balance is too low/i];
// What Claude Code prints (exit 1, no JSON) when it refuses to start with the flags it was given.
const rootRefusal = /--dangerously-skip-permissions cannot be used with root/;
const argumentRejection = [
  /^error: (?:unknown option|option '.*' argument .* is invalid|too many arguments|missing required argument)/,
];

const finite = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
const count = (value: unknown): number => finite(value) ?? 0;

/**
 * Claude Code's own verdict on a run that ended by itself, or `undefined` to keep the
 * generic one (a plain success, or output it does not recognise).
 */
export function claudeVerdict(
  facts: OutcomeFacts,
  generic: OutcomeVerdict,
  limits: { maxTurns: number; budgetUsd?: number | undefined },
): OutcomeVerdict | undefined {
  if (!endedOnItsOwn(generic)) return undefined;
  const tail = facts.process.outputTail;
  const result = readClaudeResult(tail);
  if (result === undefined) {
    if (rootRefusal.test(tail)) {
      return {
        outcome: 'error',
        permanent: true,
        detail:
          'Claude Code refuses --dangerously-skip-permissions as root: run the worker as another user, or pass IS_SANDBOX=1 (agents.env.pass) when the sandbox is deliberate',
      };
    }
    const rejected = firstMatchingLine(tail, argumentRejection);
    if (rejected !== undefined)
      return { outcome: 'error', permanent: true, detail: `Claude Code rejected its arguments: ${rejected}` };
    const apiError = firstMatchingLine(tail, apiErrorPatterns);
    return apiError === undefined ? undefined : apiErrorVerdict('Claude Code', apiError, generic);
  }
  if (result.subtype === 'error_max_turns') {
    const turns = typeof result.num_turns === 'number' ? ` after ${result.num_turns} turns` : '';
    return capVerdict(`Claude Code reached its turn cap (--max-turns ${limits.maxTurns})${turns}`);
  }
  if (result.subtype === 'error_max_budget_usd') {
    const limit = limits.budgetUsd === undefined ? '' : ` (--max-budget-usd ${formatUsd(limits.budgetUsd)})`;
    const spent = finite(result.total_cost_usd);
    return {
      outcome: 'failed',
      detail: `Claude Code reached its money budget${limit}${spent === undefined ? '' : `: spent ${formatUsd(spent)}`}`,
    };
  }
  if (result.is_error === true) {
    const status =
      typeof result.api_error_status === 'number'
        ? ` (HTTP ${result.api_error_status}${typeof result.api_error_type === 'string' ? ` ${result.api_error_type}` : ''})`
        : '';
    const errors = Array.isArray(result.errors)
      ? result.errors.filter((e): e is string => typeof e === 'string').join('; ')
      : '';
    const text =
      typeof result.result === 'string' && result.result !== ''
        ? result.result
        : errors !== ''
          ? errors
          : String(result.subtype ?? 'error');
    // 2.1.x exits 1 here; edits made before the error still stand, as the shared rule says.
    const changed = 'files' in facts.changes && facts.changes.files.length > 0;
    return apiErrorVerdict('Claude Code', `${text.slice(0, 300)}${status}`, changed ? { outcome: 'changed' } : generic);
  }
  return undefined;
}

/** The outcome recorded on each model's totals: how the run's calls ended. */
function callOutcome(result: ClaudeResult): string {
  if (result.subtype === 'error_max_budget_usd') return 'budget';
  if (result.is_error !== true || result.subtype !== 'success') return 'ok';
  const status = result.api_error_status;
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 404) return 'model_not_found';
  return 'server';
}

/**
 * Usage, model and cost from the result object: one {@link ModelCall} per model of
 * `modelUsage` (provider `claude`, latency the whole run's), its prompt tokens counting
 * cache reads and writes too (the server processed them); the cost as the CLI reported it,
 * else tokens × `prices`. The run's model is the one that used the most tokens.
 */
export function claudeReport(
  result: ClaudeResult,
  run: { durationMs: number; prices?: PriceTable | undefined },
): RunReport {
  const usage =
    typeof result.modelUsage === 'object' && result.modelUsage !== null
      ? (result.modelUsage as Record<string, Record<string, unknown>>)
      : {};
  const outcome = callOutcome(result);
  const modelCalls: ModelCall[] = Object.entries(usage).map(([model, u]) => {
    const tokens = {
      prompt: count(u.inputTokens) + count(u.cacheReadInputTokens) + count(u.cacheCreationInputTokens),
      completion: count(u.outputTokens),
    };
    const costUsd = finite(u.costUSD) ?? costOf(run.prices, model, tokens);
    return {
      provider: 'claude',
      model,
      promptTokens: tokens.prompt,
      completionTokens: tokens.completion,
      latencyMs: run.durationMs,
      ...(costUsd === undefined ? {} : { costUsd }),
      outcome,
    };
  });
  const tokens = modelCalls.reduce(
    (sum, c) => ({ prompt: sum.prompt + c.promptTokens, completion: sum.completion + c.completionTokens }),
    { prompt: 0, completion: 0 },
  );
  const main = modelCalls.reduce<ModelCall | undefined>(
    (best, c) =>
      best === undefined || c.promptTokens + c.completionTokens > best.promptTokens + best.completionTokens ? c : best,
    undefined,
  );
  const costs = modelCalls.map((c) => c.costUsd);
  const summed =
    costs.length > 0 && costs.every((c) => c !== undefined)
      ? costs.reduce((a: number, b) => a + (b ?? 0), 0)
      : undefined;
  const costUsd = finite(result.total_cost_usd) ?? summed;
  return {
    tokens,
    ...(main === undefined ? {} : { model: main.model }),
    ...(costUsd === undefined ? {} : { costUsd }),
    modelCalls,
    ...(result.subtype === 'error_max_budget_usd' ? { budgetExceeded: true } : {}),
  };
}
