import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { createTempRepo, closedPort, startOllamaStandIn, type OllamaStandIn, type TempRepo } from '@codefleet/testkit';
import { createBuiltinAgent, type AgentRunRequest, type PriceTable } from '../src/index.js';
import { agentTestEnv } from './conformance.js';

// Every model call of the built-in agent is recorded (AgentRunner), against the labeled
// Ollama stand-in (testkit): provider, model, tokens, latency, cost from the price table and
// how the call ended; the money budget is honoured before each call like the token budget.

const goodReply =
  'Plan: add multiply.\n\n```js:src/calc.js\nexport const add = (a, b) => a + b;\nexport const multiply = (a, b) => a * b;\n```\n';
// $1 per million prompt tokens, $2 per million completion tokens.
const prices: PriceTable = { 'qwen2.5-coder:*': { inputPerMtok: 1, outputPerMtok: 2 } };

let server: OllamaStandIn | undefined;
let repo: TempRepo | undefined;
afterEach(async () => {
  await server?.close();
  await repo?.dispose();
  server = undefined;
  repo = undefined;
});

const configFor = (yaml: string) =>
  parseConfig(`agents:\n  ollama:\n${yaml}`, { env: {}, baseDir: '/srv', hostname: 'h' }).config.agents.ollama;

async function setup(options: Parameters<typeof startOllamaStandIn>[0] = {}) {
  server = await startOllamaStandIn(options);
  repo = await createTempRepo({ files: { 'src/calc.js': 'export const add = (a, b) => a + b;\n' } });
  await mkdir(join(repo.path, '.codefleet'), { recursive: true });
  await writeFile(join(repo.path, '.codefleet', 'task.md'), '# Task: Add multiply\n');
  return { s: server, r: repo };
}

const request = (workdir: string, overrides: Partial<AgentRunRequest> = {}): AgentRunRequest => ({
  workdir,
  prompt: 'Add multiply(a, b) to src/calc.js',
  pass: 'implement',
  attempt: 1,
  timeoutMs: 20_000,
  env: agentTestEnv(),
  ...overrides,
});

describe('model calls of the built-in agent', () => {
  it('records the re-ask and the applied reply with tokens, latency and cost; the run sums the cost', async () => {
    const { s, r } = await setup({
      replies: [
        { content: 'no patch', promptTokens: 1_000, completionTokens: 500 },
        { content: goodReply, promptTokens: 2_000, completionTokens: 250 },
      ],
    });
    const result = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(request(r.path, { prices }));
    expect(result).toMatchObject({ outcome: 'changed', model: 'qwen2.5-coder:7b' });
    expect(result.modelCalls).toEqual([
      {
        provider: 'ollama',
        model: 'qwen2.5-coder:7b',
        promptTokens: 1_000,
        completionTokens: 500,
        latencyMs: expect.any(Number),
        costUsd: 0.002,
        outcome: 'unusable',
      },
      {
        provider: 'ollama',
        model: 'qwen2.5-coder:7b',
        promptTokens: 2_000,
        completionTokens: 250,
        latencyMs: expect.any(Number),
        costUsd: 0.0025,
        outcome: 'ok',
      },
    ]);
    expect(result.costUsd).toBeCloseTo(0.0045, 10);
    for (const call of result.modelCalls!) expect(call.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('an unpriced model records its calls without a cost, and the run has none (unknown is not free)', async () => {
    const { s, r } = await setup({ replies: [goodReply] });
    const result = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(
      request(r.path, { prices: { 'gpt-*': { inputPerMtok: 5, outputPerMtok: 15 } } }),
    );
    expect(result.modelCalls).toHaveLength(1);
    expect(result.modelCalls![0]).not.toHaveProperty('costUsd');
    expect(result).not.toHaveProperty('costUsd');
  });

  it('failed calls are recorded with why: server, unauthorized, unreachable, a timeout (aborted, estimate charged)', async () => {
    const { s, r } = await setup({
      replies: [{ status: 500, error: 'out of memory' }, { status: 401, error: 'bad key' }, { hang: true }],
    });
    // One request per call: what a single failure is recorded as (retries are model-call-policy.test.ts's).
    const once = '    request_retries: 0\n';
    const server500 = await createBuiltinAgent(configFor(`    host: ${s.url}\n${once}`)).run(
      request(r.path, { prices }),
    );
    expect(server500.modelCalls).toEqual([
      expect.objectContaining({ outcome: 'server', promptTokens: 0, completionTokens: 0, costUsd: 0 }),
    ]);

    const refused = await createBuiltinAgent(
      configFor(`    provider: openai\n    host: ${s.openAiBase}\n    model: qwen2.5-coder:7b\n`),
    ).run(request(r.path));
    expect(refused.modelCalls).toEqual([expect.objectContaining({ provider: 'openai', outcome: 'unauthorized' })]);

    const timedOut = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(
      request(r.path, { prices, timeoutMs: 400 }),
    );
    expect(timedOut.outcome).toBe('timeout');
    const [call] = timedOut.modelCalls!;
    expect(call).toMatchObject({ outcome: 'aborted', promptTokens: timedOut.tokens!.prompt });
    expect(call!.costUsd).toBeGreaterThan(0);

    const port = await closedPort();
    const down = await createBuiltinAgent(configFor(`    host: http://127.0.0.1:${port}\n${once}`)).run(
      request(r.path),
    );
    expect(down.modelCalls).toEqual([expect.objectContaining({ outcome: 'unreachable' })]);
    expect(down.model).toBe('qwen2.5-coder:7b');
  });

  it('stops before the next call once the money budget is spent: budgetExceeded, the refused call recorded as budget', async () => {
    const { s, r } = await setup({
      replies: [{ content: 'no patch', promptTokens: 3_000, completionTokens: 1_000 }, goodReply],
    });
    // The first call costs $0.005; the budget is $0.004.
    const result = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(
      request(r.path, { prices, budgetUsd: 0.004 }),
    );
    expect(s.requests).toHaveLength(1);
    expect(result).toMatchObject({ outcome: 'failed', budgetExceeded: true, costUsd: 0.005 });
    expect(result.detail).toMatch(/money budget spent \(\$0\.0050 of \$0\.0040 in this run\)/);
    expect(result.modelCalls!.map((c) => c.outcome)).toEqual(['unusable', 'budget']);
    expect(result.modelCalls![1]).toMatchObject({ promptTokens: 0, completionTokens: 0, costUsd: 0 });
  });

  it('caps the reply at the tokens the money left buys, and sends no prompt that alone would cost more', async () => {
    const { s, r } = await setup({ replies: [goodReply] });
    const result = await createBuiltinAgent(configFor(`    host: ${s.url}\n    max_tokens: 100000\n`)).run(
      request(r.path, { prices, budgetUsd: 0.01 }),
    );
    expect(result.outcome).toBe('changed');
    const promptTokens = Math.ceil(s.requests[0]!.messages.reduce((sum, m) => sum + m.content.length, 0) / 4);
    // ($0.01 - prompt at $1/Mtok) buys this many completion tokens at $2/Mtok.
    expect(s.requests[0]!.options).toMatchObject({
      num_predict: Math.floor(((0.01 - promptTokens / 1_000_000) * 1_000_000) / 2),
    });

    const tooSmall = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(
      request(r.path, { prices, budgetUsd: 0.000_01 }),
    );
    expect(s.requests).toHaveLength(1);
    expect(tooSmall).toMatchObject({
      outcome: 'failed',
      budgetExceeded: true,
      modelCalls: [expect.objectContaining({ outcome: 'budget' })],
    });
    expect(tooSmall.detail).toMatch(/money budget too small for the prompt/);
    // Without a price nothing is known to be spent; a budget of 0 still sends nothing.
    const zero = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(request(r.path, { budgetUsd: 0 }));
    expect(s.requests).toHaveLength(1);
    expect(zero).toMatchObject({ budgetExceeded: true, modelCalls: [expect.objectContaining({ outcome: 'budget' })] });
    expect(zero).not.toHaveProperty('costUsd');
  });

  it('a token budget refusal is recorded as a budget call too', async () => {
    const { s, r } = await setup({ replies: [goodReply] });
    const result = await createBuiltinAgent(configFor(`    host: ${s.url}\n`)).run(
      request(r.path, { tokenBudget: 20 }),
    );
    expect(result).toMatchObject({
      budgetExceeded: true,
      modelCalls: [expect.objectContaining({ outcome: 'budget' })],
    });
  });
});
