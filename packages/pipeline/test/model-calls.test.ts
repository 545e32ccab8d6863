import { describe, expect, it } from '@jest/globals';
import type { AgentRunResult } from '@codefleet/agents';
import { agentRunSchema } from '@codefleet/core';
import { agentRunCosts } from '../src/model-calls.js';

const base: AgentRunResult = {
  exitCode: 0,
  signal: null,
  timedOut: false,
  durationMs: 5,
  outputTail: '',
  changedFiles: [],
  outcome: 'changed',
};
const entry = {
  pass: 'implement',
  attempt: 1,
  inner_attempt: 1,
  agent: 'claude',
  exit_code: 0,
  signal: null,
  timed_out: false,
  duration_ms: 5,
  output_tail: '',
  changed_files: [],
  outcome: 'changed',
};

describe('agentRunCosts', () => {
  it('maps model, cost, calls (snake_case) and the tier into the run record', () => {
    const fields = agentRunCosts(
      {
        ...base,
        model: 'claude-sonnet-4-5',
        costUsd: 0.0123,
        modelCalls: [
          {
            provider: 'claude',
            model: 'claude-sonnet-4-5',
            promptTokens: 10,
            completionTokens: 20,
            latencyMs: 1234.6,
            costUsd: 0.0123,
            outcome: 'ok',
          },
        ],
      },
      2,
    );
    expect(fields).toEqual({
      model: 'claude-sonnet-4-5',
      cost_usd: 0.0123,
      tier: 2,
      model_calls: [
        {
          provider: 'claude',
          model: 'claude-sonnet-4-5',
          prompt_tokens: 10,
          completion_tokens: 20,
          latency_ms: 1235,
          cost_usd: 0.0123,
          outcome: 'ok',
        },
      ],
    });
    expect(agentRunCosts(base, undefined)).toEqual({});
  });

  it('what an agent reports cannot make the run unstorable: long strings cut, bad numbers dropped, calls bounded', () => {
    const call = {
      provider: 'p'.repeat(500),
      model: 'm'.repeat(5_000),
      promptTokens: -3,
      completionTokens: Number.NaN,
      latencyMs: Infinity,
      costUsd: -1,
      outcome: '',
    };
    const fields = agentRunCosts(
      { ...base, model: 'x'.repeat(5_000), costUsd: Number.NaN, modelCalls: Array.from({ length: 2_000 }, () => call) },
      undefined,
    );
    expect(fields.cost_usd).toBeUndefined();
    expect(fields.model_calls).toHaveLength(500);
    expect(fields.model_calls![0]).toEqual({
      provider: 'p'.repeat(64),
      model: 'm'.repeat(200),
      prompt_tokens: 0,
      completion_tokens: 0,
      latency_ms: 0,
      outcome: 'unknown',
    });
    expect(agentRunSchema.safeParse({ ...entry, ...fields }).success).toBe(true);
  });
});
