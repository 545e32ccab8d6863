import type { AgentRunResult, ModelCall, PriceTable } from '../port.js';
import { costOf } from '../pricing.js';

/** What the Gemini CLI's JSON verdict says the run spent: tokens, main model, cost, per-model totals. */
export type GeminiUsage = Pick<AgentRunResult, 'tokens' | 'model' | 'costUsd' | 'modelCalls'>;

interface ModelStats {
  api?: { totalRequests?: unknown; totalErrors?: unknown; totalLatencyMs?: unknown };
  tokens?: { prompt?: unknown; candidates?: unknown; thoughts?: unknown; total?: unknown };
  roles?: Record<string, unknown>;
}

const count = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;

/**
 * Reads `stats.models` of `gemini --output-format json` (the object printed at the end of
 * a run, success or error): per model `tokens.prompt` (everything sent, cached included),
 * `tokens.candidates` plus `tokens.thoughts` (thinking is billed as output), and
 * `api.totalLatencyMs`. One {@link ModelCall} per model (provider `gemini`): the CLI calls
 * a small model to route each prompt besides the main one. The run's `model` is the one
 * in the `main` role (else the one that used most tokens); `costUsd` is tokens × `prices`,
 * absent when a model that spent tokens has no price, so a missing price never reads as
 * free. Undefined when the output holds no stats.
 */
export function geminiUsage(
  output: Record<string, unknown> | undefined,
  prices: PriceTable | undefined,
): GeminiUsage | undefined {
  const stats = output?.stats;
  if (typeof stats !== 'object' || stats === null) return undefined;
  const models = (stats as { models?: unknown }).models;
  if (typeof models !== 'object' || models === null) return undefined;
  const calls: (ModelCall & { main: boolean })[] = [];
  for (const [model, value] of Object.entries(models as Record<string, ModelStats>)) {
    if (typeof value !== 'object' || value === null) continue;
    const promptTokens = count(value.tokens?.prompt);
    const completionTokens = count(value.tokens?.candidates) + count(value.tokens?.thoughts);
    const requests = count(value.api?.totalRequests);
    const costUsd = costOf(prices, model, { prompt: promptTokens, completion: completionTokens });
    calls.push({
      provider: 'gemini',
      model,
      promptTokens,
      completionTokens,
      latencyMs: count(value.api?.totalLatencyMs),
      ...(costUsd === undefined ? {} : { costUsd }),
      outcome: requests > 0 && count(value.api?.totalErrors) >= requests ? 'error' : 'ok',
      main: typeof value.roles === 'object' && value.roles !== null && 'main' in value.roles,
    });
  }
  if (calls.length === 0) return undefined;
  const spent = (call: ModelCall) => call.promptTokens + call.completionTokens;
  const main =
    calls.filter((call) => call.main).sort((a, b) => spent(b) - spent(a))[0] ??
    [...calls].sort((a, b) => spent(b) - spent(a))[0];
  const priced = calls.every((call) => call.costUsd !== undefined || spent(call) === 0);
  return {
    tokens: {
      prompt: calls.reduce((sum, call) => sum + call.promptTokens, 0),
      completion: calls.reduce((sum, call) => sum + call.completionTokens, 0),
    },
    ...(main === undefined ? {} : { model: main.model }),
    ...(priced ? { costUsd: calls.reduce((sum, call) => sum + (call.costUsd ?? 0), 0) } : {}),
    modelCalls: calls.map(({ main: _main, ...call }) => call),
  };
}
