// Reading Claude Code's final JSON result: the shapes are those 2.1.331 prints (see claude-real.test.ts
// for the real binary); here the cases a stand-in run does not reach (several models, no reported cost).
import { describe, expect, it } from '@jest/globals';
import { claudeReport, claudeVerdict, readClaudeResult } from '../src/cli/claude-result.js';

const usage = (inputTokens: number, outputTokens: number, costUSD?: number) => ({
  inputTokens,
  outputTokens,
  cacheReadInputTokens: 0,
  cacheCreationInputTokens: 0,
  webSearchRequests: 0,
  ...(costUSD === undefined ? {} : { costUSD }),
});

describe('claudeReport', () => {
  it("one model call per model; the run's model is the one that used the most tokens; the CLI's cost wins", () => {
    const result = readClaudeResult(
      `log line\n${JSON.stringify({
        type: 'result',
        subtype: 'success',
        is_error: false,
        total_cost_usd: 0.05,
        modelUsage: { 'claude-haiku-4-5': usage(900, 20, 0.001), 'claude-sonnet-4-6': usage(4000, 300, 0.049) },
      })}\n`,
    );
    expect(result).toBeDefined();
    const report = claudeReport(result!, {
      durationMs: 1234,
      prices: { 'claude-*': { inputPerMtok: 100, outputPerMtok: 100 } },
    });
    expect(report).toEqual({
      tokens: { prompt: 4900, completion: 320 },
      model: 'claude-sonnet-4-6',
      costUsd: 0.05,
      modelCalls: [
        {
          provider: 'claude',
          model: 'claude-haiku-4-5',
          promptTokens: 900,
          completionTokens: 20,
          latencyMs: 1234,
          costUsd: 0.001,
          outcome: 'ok',
        },
        {
          provider: 'claude',
          model: 'claude-sonnet-4-6',
          promptTokens: 4000,
          completionTokens: 300,
          latencyMs: 1234,
          costUsd: 0.049,
          outcome: 'ok',
        },
      ],
    });
  });

  it('without a reported cost, tokens × the price table; unpriced models leave the run cost unknown', () => {
    const priced = claudeReport(
      { type: 'result', subtype: 'success', modelUsage: { 'm-1': usage(1_000_000, 100_000) } },
      {
        durationMs: 1,
        prices: { 'm-*': { inputPerMtok: 3, outputPerMtok: 15 } },
      },
    );
    expect(priced).toMatchObject({ costUsd: 4.5, modelCalls: [{ costUsd: 4.5 }] });
    const unpriced = claudeReport(
      { type: 'result', subtype: 'success', modelUsage: { 'm-1': usage(10, 1) } },
      { durationMs: 1 },
    );
    expect(unpriced.costUsd).toBeUndefined();
    expect(unpriced.modelCalls?.[0]).not.toHaveProperty('costUsd');
  });

  it('a budget stop sets budgetExceeded; an API error marks the calls with its kind', () => {
    const budget = claudeReport(
      {
        type: 'result',
        subtype: 'error_max_budget_usd',
        is_error: true,
        total_cost_usd: 0.02,
        modelUsage: { m: usage(1, 1, 0.02) },
      },
      { durationMs: 1 },
    );
    expect(budget).toMatchObject({ budgetExceeded: true, modelCalls: [{ outcome: 'budget' }] });
    const refused = claudeReport(
      { type: 'result', subtype: 'success', is_error: true, api_error_status: 404, modelUsage: { m: usage(1, 1, 0) } },
      { durationMs: 1 },
    );
    expect(refused.modelCalls?.[0]?.outcome).toBe('model_not_found');
    expect(refused.budgetExceeded).toBeUndefined();
  });
});

describe('readClaudeResult', () => {
  it('finds the result at the end of --verbose output even when the start of its array was cut off', () => {
    const messages = [
      { type: 'system', subtype: 'init' },
      { type: 'assistant', message: { content: [{ type: 'text', text: 'a,{"b' }] } },
      {
        type: 'result',
        subtype: 'success',
        permission_denials: [{ tool_name: 'Bash' }, { tool_name: 'Write' }],
        total_cost_usd: 0.5,
      },
    ];
    const line = JSON.stringify(messages);
    expect(readClaudeResult(`${line}\n`)).toMatchObject({ type: 'result', total_cost_usd: 0.5 });
    expect(readClaudeResult(line.slice(40))).toMatchObject({ type: 'result', total_cost_usd: 0.5 });
    expect(readClaudeResult('[{"type":"assistant"}]')).toBeUndefined();
  });
});

describe('claudeVerdict', () => {
  const facts = (outputTail: string, files: string[] = []) => ({
    process: { exitCode: 1, signal: null, timedOut: false, cancelled: false, outputTail },
    changes: { files },
    program: 'claude',
    timeoutMs: 1000,
  });
  it('an error_during_execution without result text says what its errors say', () => {
    const tail = JSON.stringify({
      type: 'result',
      subtype: 'error_during_execution',
      is_error: true,
      errors: ['tool crashed'],
    });
    expect(claudeVerdict(facts(tail), { outcome: 'failed', detail: 'exited with code 1' }, { maxTurns: 3 })).toEqual({
      outcome: 'error',
      detail: 'Claude Code reported an API error: tool crashed',
    });
  });
});
