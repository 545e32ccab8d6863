import { describe, expect, it } from '@jest/globals';
import { geminiUsage } from '../src/cli/gemini-usage.js';

/** One entry of `stats.models` as gemini 0.61.0 prints it. */
const model = (role: string, prompt: number, candidates: number, thoughts = 0, requests = 1, errors = 0) => ({
  api: { totalRequests: requests, totalErrors: errors, totalLatencyMs: 120, errorsByType: {} },
  tokens: { input: prompt, prompt, candidates, total: prompt + candidates + thoughts, cached: 0, thoughts, tool: 0 },
  roles: { [role]: {} },
});

describe('geminiUsage (stats.models of gemini --output-format json)', () => {
  it('one model call per model; the main role is the run model; thoughts bill as output; cost from the price table', () => {
    const usage = geminiUsage(
      {
        response: 'Done',
        stats: {
          models: { 'gemini-flash-lite': model('utility_router', 10, 5), 'gemini-pro': model('main', 2000, 60, 40, 2) },
        },
      },
      {
        'gemini-pro': { inputPerMtok: 1.25, outputPerMtok: 10 },
        'gemini-flash*': { inputPerMtok: 0.1, outputPerMtok: 0.4 },
      },
    );
    expect(usage).toEqual({
      tokens: { prompt: 2010, completion: 105 },
      model: 'gemini-pro',
      costUsd: (10 * 0.1 + 5 * 0.4 + 2000 * 1.25 + 100 * 10) / 1e6,
      modelCalls: [
        {
          provider: 'gemini',
          model: 'gemini-flash-lite',
          promptTokens: 10,
          completionTokens: 5,
          latencyMs: 120,
          costUsd: (10 * 0.1 + 5 * 0.4) / 1e6,
          outcome: 'ok',
        },
        {
          provider: 'gemini',
          model: 'gemini-pro',
          promptTokens: 2000,
          completionTokens: 100,
          latencyMs: 120,
          costUsd: (2000 * 1.25 + 100 * 10) / 1e6,
          outcome: 'ok',
        },
      ],
    });
  });

  it('no cost when a model that spent tokens has no price: a missing price never reads as free', () => {
    const usage = geminiUsage(
      { stats: { models: { 'gemini-pro': model('main', 100, 10), other: model('utility_router', 10, 5) } } },
      { 'gemini-pro': { inputPerMtok: 1, outputPerMtok: 1 } },
    );
    expect(usage?.costUsd).toBeUndefined();
    expect(usage?.modelCalls?.[0]?.costUsd).toBe(110 / 1e6);
  });

  it('a model whose every request failed is an error call; no stats, no usage', () => {
    expect(
      geminiUsage({ stats: { models: { 'gemini-pro': model('main', 0, 0, 0, 2, 2) } } }, undefined)?.modelCalls?.[0]
        ?.outcome,
    ).toBe('error');
    expect(geminiUsage({ session_id: 'x', error: { message: 'boom' } }, undefined)).toBeUndefined();
    expect(geminiUsage(undefined, undefined)).toBeUndefined();
  });
});
