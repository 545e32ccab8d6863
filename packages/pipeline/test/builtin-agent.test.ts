import { afterEach, describe, expect, it } from '@jest/globals';
import { createAgent, createBuiltinAgent } from '@codefleet/agents';
import { parseConfig } from '@codefleet/config';
import { git, startOllamaStandIn, type OllamaStandIn } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { runJob } from '../src/index.js';
import { createHarness, type Harness } from './harness.js';

// The built-in agent in the real two-pass loop: real workspace, verification, forge and
// queue; the model is the labeled Ollama stand-in from testkit, replying from a script.

const implementReply = [
  'Plan: export two() from src/lib.js next to one().',
  '',
  '```js:src/lib.js',
  'export const one = () => 1;',
  'export const two = () => 2;',
  '```',
].join('\n');

const testReply = [
  'Plan: a node:test file for two().',
  '',
  '```js:test/two.test.js',
  "import { test } from 'node:test';",
  "import assert from 'node:assert/strict';",
  "import { two } from '../src/lib.js';",
  "test('two', () => assert.equal(two(), 2));",
  '```',
].join('\n');

let h: Harness | undefined;
let model: OllamaStandIn | undefined;
afterEach(async () => {
  await h?.dispose();
  await model?.close();
  h = undefined;
  model = undefined;
});

const ollamaConfig = (host: string, extra = '') =>
  parseConfig(`agents:\n  ollama:\n    host: ${host}\n${extra}`, { env: {}, baseDir: '/srv', hostname: 'h' }).config
    .agents.ollama;

describe('runJob with the built-in agent on the Ollama stand-in', () => {
  it('completes the two-pass loop, recovering from one unparseable reply, and records the tokens', async () => {
    model = await startOllamaStandIn({
      replies: ['Sure! I will add a two() function that returns 2.', implementReply, testReply],
    });
    h = await createHarness();
    const agent = createBuiltinAgent(ollamaConfig(model.url));
    h.deps.agentFor = () => agent;
    const job = h.job({
      title: 'Add two()',
      body: 'Export `two()` from src/lib.js, returning 2.\n\n- [ ] two() returns 2\n- [ ] it is tested',
    });
    await h.drain(job);

    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ stage: 'done', outcome: 'succeeded' });
    expect(run!.agent_runs.map((a) => [a.agent, a.pass, a.inner_attempt, a.outcome])).toEqual([
      ['ollama', 'implement', 1, 'changed'],
      ['ollama', 'test', 1, 'changed'],
    ]);
    expect(run!.agent_runs.every((a) => a.tokens !== undefined && a.tokens.prompt > 0 && a.tokens.completion > 0)).toBe(
      true,
    );
    // Every model call is in the record, the unusable one too; no price table, so no cost.
    expect(run!.agent_runs.map((a) => [a.model, a.model_calls?.map((c) => [c.provider, c.model, c.outcome])])).toEqual([
      [
        'qwen2.5-coder:7b',
        [
          ['ollama', 'qwen2.5-coder:7b', 'unusable'],
          ['ollama', 'qwen2.5-coder:7b', 'ok'],
        ],
      ],
      ['qwen2.5-coder:7b', [['ollama', 'qwen2.5-coder:7b', 'ok']]],
    ]);
    expect(run!.agent_runs[0]!.model_calls![1]!.prompt_tokens).toBeGreaterThan(0);
    expect(run!.agent_runs.some((a) => a.cost_usd !== undefined)).toBe(false);
    expect(run!.verification.some((v) => v.step === 'test' && v.passed)).toBe(true);

    // The unparseable reply went back once with the reason; the test pass saw pass 1's change.
    expect(model.requests).toHaveLength(3);
    expect(model.requests[1]!.messages.at(-1)!.content).toMatch(/could not be used: it holds no file blocks/);
    const testPrompt = model.requests[2]!.messages[1]!.content;
    expect(testPrompt).toMatch(/write or update automated tests/);
    expect(testPrompt).toContain('export const two = () => 2;');
    expect(testPrompt).toContain('two() returns 2');

    const files = await git(h.dir.path, ['--git-dir', h.origin, 'diff', '--name-only', `main...${branchName(job)}`]);
    expect(files.split('\n').sort()).toEqual(['src/lib.js', 'test/two.test.js']);
    expect(await h.forge.findPullRequest(job.repo, branchName(job))).toMatchObject({
      title: 'Add two()',
      draft: false,
    });
  });

  it('a spent token budget ends the job as budget_exceeded, recorded, without another model call', async () => {
    model = await startOllamaStandIn({
      replies: [{ content: implementReply, promptTokens: 1_500, completionTokens: 600 }, testReply],
    });
    h = await createHarness();
    h.deps.agentFor = () => createBuiltinAgent(ollamaConfig(model!.url, '    token_budget: 2000\n'));
    const job = h.job({ title: 'Add two()' });
    const result = await runJob(h.deps, { job, attempt: 1, workerId: 'w', signal: new AbortController().signal });

    expect(result.action).toBe('dead_letter');
    expect(result.run).toMatchObject({ outcome: 'failed', error: { code: 'budget_exceeded', verdict: 'permanent' } });
    expect(result.run.error!.message).toMatch(
      /spent 2100 model tokens, its budget is 2000 \(agents\.ollama\.token_budget\)/,
    );
    expect(result.run.agent_runs).toEqual([
      expect.objectContaining({ pass: 'implement', outcome: 'changed', tokens: { prompt: 1_500, completion: 600 } }),
    ]);
    // The first run was told what was left: the reply may use what the prompt leaves of 2000.
    expect(model.requests).toHaveLength(1);
    const promptChars = model.requests[0]!.messages.reduce((sum, m) => sum + m.content.length, 0);
    expect(model.requests[0]!.options).toMatchObject({ num_predict: 2_000 - Math.ceil(promptChars / 4) });
    expect(model.pending).toBe(1);
  });

  it("prices its tokens at the configured model and stops at the job's money budget before another model call", async () => {
    model = await startOllamaStandIn({
      replies: [{ content: implementReply, promptTokens: 1_500, completionTokens: 600 }, testReply],
    });
    const { config } = parseConfig(`agents:\n  ollama:\n    host: ${model.url}\n    model: qwen2.5-coder:7b\n`, {
      env: {},
      baseDir: '/srv',
      hostname: 'h',
    });
    // $10 / $20 per million tokens: the first run costs 1500 × 10e-6 + 600 × 20e-6 = $0.027.
    h = await createHarness({
      prices: { 'qwen2.5-coder:*': { inputPerMtok: 10, outputPerMtok: 20 } },
      budgetUsd: { job: 0.02 },
    });
    const agent = createAgent('ollama', config.agents);
    h.deps.agentFor = () => agent;
    const job = h.job({ title: 'Add two()' });
    const result = await runJob(h.deps, { job, attempt: 1, workerId: 'w', signal: new AbortController().signal });

    expect(result.run).toMatchObject({ outcome: 'failed', error: { code: 'budget_exceeded', verdict: 'permanent' } });
    expect(result.run.error!.message).toBe('spent $0.0270 of the $0.0200 job budget (costs.budget_usd.job)');
    expect(result.run.agent_runs.map((a) => [a.pass, a.cost_usd])).toEqual([['implement', expect.closeTo(0.027, 10)]]);
    expect(model.pending).toBe(1);
  });

  it('a budget too small for the prompt ends the job as budget_exceeded before any model call', async () => {
    model = await startOllamaStandIn({ replies: [implementReply, testReply] });
    h = await createHarness();
    h.deps.agentFor = () => createBuiltinAgent(ollamaConfig(model!.url, '    token_budget: 50\n'));
    const job = h.job({ title: 'Add two()' });
    const result = await runJob(h.deps, { job, attempt: 1, workerId: 'w', signal: new AbortController().signal });

    expect(result.action).toBe('dead_letter');
    expect(result.run).toMatchObject({ outcome: 'failed', error: { code: 'budget_exceeded', verdict: 'permanent' } });
    expect(result.run.error!.message).toMatch(
      /token budget too small for the prompt: about \d+ prompt tokens, 50 of the budget left .*\(agents\.ollama\.token_budget\)/,
    );
    // One agent run, recorded with nothing spent; no second inner attempt on the same budget.
    expect(result.run.agent_runs).toEqual([
      expect.objectContaining({ pass: 'implement', outcome: 'failed', tokens: { prompt: 0, completion: 0 } }),
    ]);
    expect(model.requests).toHaveLength(0);
  });
});
