import { describe, expect, it } from '@jest/globals';
import { budgetHookScript, finishedResponseCost } from '../src/cli/gemini-budget-hook.js';
import { priceOf } from '../src/pricing.js';

const prices = {
  'gemini-*': { inputPerMtok: 1, outputPerMtok: 10 },
  'gemini-pro': { inputPerMtok: 2, outputPerMtok: 20 },
};
const event = (model: unknown, finishReason: string | undefined, usage: Record<string, unknown>) => ({
  llm_request: { model },
  llm_response: { candidates: [finishReason ? { finishReason } : {}], usageMetadata: usage },
});

describe('finishedResponseCost', () => {
  it('prices a finished response with the adapters’ lookup: exact entry first, then the longest prefix', () => {
    const usage = { promptTokenCount: 1000, candidatesTokenCount: 40, thoughtsTokenCount: 10 };
    expect(finishedResponseCost(event('gemini-pro', 'STOP', usage), prices)).toBeCloseTo(0.003, 10);
    expect(finishedResponseCost(event('gemini-flash', 'STOP', usage), prices)).toBeCloseTo(0.0015, 10);
  });

  it('counts nothing for a chunk before the end, and 0 for an unpriced model or unreadable counts', () => {
    expect(finishedResponseCost(event('gemini-pro', undefined, { promptTokenCount: 9 }), prices)).toBeUndefined();
    expect(finishedResponseCost(null, prices)).toBeUndefined();
    expect(finishedResponseCost(event('other', 'STOP', { promptTokenCount: 1000 }), prices)).toBe(0);
    expect(finishedResponseCost(event('gemini-x', 'STOP', { promptTokenCount: '1000' }), prices)).toBe(0);
  });
});

describe('budgetHookScript', () => {
  it('carries the price lookup the adapters use, not a second one', () => {
    const script = budgetHookScript({ budgetUsd: 1, prices, spentPath: '/tmp/spent.json', stopReason: 'stop' });
    expect(script).toContain(String(priceOf));
    expect(script.match(/function priceOf\b/g)).toHaveLength(1);
  });
});
