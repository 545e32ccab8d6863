import { afterEach, describe, expect, it } from '@jest/globals';
import { createScriptAgent, type Agent, type AgentRunRequest, type AgentRunResult } from '@codefleet/agents';
import { git } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { createHarness, implementsFeature, type Harness } from './harness.js';

// Local first, escalate on failure, on real parts: scripted agents (one module per tier) in
// real git working copies, real verification, the real queue and run store.

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

const tiers = {
  'local-small': { agent: 'ollama', model: 'qwen2.5-coder:1.5b' },
  'local-big': { agent: 'ollama', model: 'qwen2.5-coder:7b' },
};

/** A harness whose agent for a tier name is the scripted module of that name. */
async function chainHarness(chains: Record<string, string[]>): Promise<Harness> {
  const harness = await createHarness({ chains, tiers });
  harness.deps.agentFor = (name) => createScriptAgent({ module: harness.agentModule(name) });
  return harness;
}

// Pass 1 goes through; pass 2 writes a test that always fails: the tier exhausts its fix attempts in pass 2.
const failsItsTests = `
fs.writeFileSync(path.join(workdir, 'junk-from-small.txt'), 'left behind\\n');
if (pass === 'implement') fs.appendFileSync(path.join(workdir, 'src', 'lib.js'), 'export const two = () => 3;\\n');
if (pass === 'test') fs.writeFileSync(path.join(workdir, 'test', 'two.test.js'),
  "import { test } from 'node:test';\\nimport assert from 'node:assert/strict';\\nimport { two } from '../src/lib.js';\\ntest('two', () => assert.equal(two(), 2));\\n");
`;

// The next tier checks it starts from the base, told why the earlier one gave up.
const succeedsFromTheBase = `
const prompt = fs.readFileSync(args.get('--prompt-file'), 'utf8');
if (pass === 'implement' && attempt === 1) {
  if (fs.readFileSync(path.join(workdir, 'src', 'lib.js'), 'utf8').includes('two')) throw new Error('not reset: the earlier tier\\'s two() is still there');
  if (fs.existsSync(path.join(workdir, 'junk-from-small.txt'))) throw new Error('not reset: the earlier tier\\'s file is still there');
  if (!prompt.includes('Another agent tried this task first') || !prompt.includes('still failing after 3 attempts')) throw new Error('no earlier feedback in the prompt: ' + prompt);
}
${implementsFeature}
`;

describe('escalation chains', () => {
  it('tier 1 exhausts its fix attempts, tier 2 solves it from the base; tiers recorded, the PR says so', async () => {
    h = await chainHarness({ escalation: ['local-small', 'local-big'] });
    await h.agent(failsItsTests, 'local-small');
    await h.agent(succeedsFromTheBase, 'local-big');
    const job = h.job({ title: 'Add two()' });
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({
      stage: 'done',
      outcome: 'succeeded',
      chain: { name: 'escalation', tiers: ['local-small', 'local-big'] },
    });
    expect(run!.tiers).toEqual([
      expect.objectContaining({
        tier: 0,
        profile: 'local-small',
        agent: 'ollama',
        model: 'qwen2.5-coder:1.5b',
        outcome: 'failed',
        detail: expect.stringMatching(/^pass test: still failing after 3 attempts/),
      }),
      expect.objectContaining({
        tier: 1,
        profile: 'local-big',
        agent: 'ollama',
        model: 'qwen2.5-coder:7b',
        outcome: 'succeeded',
      }),
    ]);
    expect(run!.agent_runs.map((a) => [a.tier, a.pass, a.inner_attempt, a.outcome])).toEqual([
      [0, 'implement', 1, 'changed'],
      [0, 'test', 1, 'changed'],
      [0, 'test', 2, 'no_changes'],
      [0, 'test', 3, 'no_changes'],
      [1, 'implement', 1, 'changed'],
      [1, 'test', 1, 'changed'],
    ]);
    // Back to pass 1 for the next tier.
    expect(run!.stages.map((s) => s.stage)).toEqual([
      'queued',
      'preparing',
      'planning',
      'implementing',
      'testing',
      'implementing',
      'testing',
      'validating',
      'publishing',
      'done',
    ]);
    const pr = await h.forge.findPullRequest(job.repo, branchName(job));
    expect(pr!.body).toContain(
      'Solved by tier 2 of 2: local-big (ollama qwen2.5-coder:7b) after tier 1 local-small exhausted its fix attempts',
    );
    // Only the tier that solved it is published: nothing of the first tier's tree.
    const files = await git(h.dir.path, ['--git-dir', h.origin, 'diff', '--name-only', `main...${branchName(job)}`]);
    expect(files.split('\n').sort()).toEqual(['src/lib.js', 'test/two.test.js']);
  });

  it("every tier gives up: the job fails with the last tier's error, saying the chain is used up", async () => {
    h = await chainHarness({ escalation: ['local-small', 'local-big'] });
    const breaksTheBuild =
      "if (pass === 'implement') fs.appendFileSync(path.join(workdir, 'src', 'lib.js'), 'syntax error here (\\n');";
    await h.agent(breaksTheBuild, 'local-small');
    await h.agent(breaksTheBuild, 'local-big');
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'failed', error: { code: 'fix_attempts_exhausted', verdict: 'permanent' } });
    expect(run!.error!.message).toMatch(
      /^every tier of the escalation chain escalation \(local-small → local-big\) gave up; the last: pass implement: still failing/,
    );
    expect(run!.tiers?.map((t) => [t.tier, t.outcome])).toEqual([
      [0, 'failed'],
      [1, 'failed'],
    ]);
    expect(run!.agent_runs).toHaveLength(6);
  });

  it("a tier that spends its own budget hands over; each tier's cost is its runs' cost_usd", async () => {
    h = await chainHarness({ escalation: ['local-small', 'local-big'] });
    h.deps.settings = {
      ...h.deps.settings,
      tiers: { ...tiers, 'local-small': { ...tiers['local-small'], budgetUsd: 0.01 } },
    };
    const seen: (AgentRunRequest & { budget?: unknown })[] = [];
    // Stands in for a model agent reporting its cost. Its one run spends more than the tier's
    // budget, so the pipeline's own budget check ends the tier before a second run
    // (budget_exceeded, scope tier) and the next tier takes over.
    const small: Agent = {
      name: 'ollama',
      async run(req): Promise<AgentRunResult> {
        seen.push(req);
        const { appendFile } = await import('node:fs/promises');
        await appendFile(`${req.workdir}/src/lib.js`, 'export const two = () => {;\n');
        return {
          exitCode: 0,
          signal: null,
          timedOut: false,
          durationMs: 5,
          outputTail: 'edited',
          changedFiles: ['src/lib.js'],
          outcome: 'changed',
          costUsd: 0.012,
        };
      },
    };
    const big = createScriptAgent({ module: h.agentModule('local-big') });
    const bigRun = big.run.bind(big);
    h.deps.agentFor = (name) =>
      name === 'local-small' ? small : { ...big, run: async (req) => ({ ...(await bigRun(req)), costUsd: 0.25 }) };
    await h.agent(implementsFeature, 'local-big');
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'succeeded' });
    expect(run!.tiers).toEqual([
      expect.objectContaining({
        tier: 0,
        outcome: 'budget_exceeded',
        cost_usd: 0.012,
        detail: expect.stringMatching(/spent \$0\.0120 of the \$0\.0100 .*tier/),
      }),
      expect.objectContaining({ tier: 1, outcome: 'succeeded', cost_usd: 0.5 }),
    ]);
    // The tier's one run got what was left of its budget; no second run was started.
    expect(seen.map((req) => req.budgetUsd)).toEqual([0.01]);
    expect(run!.agent_runs.map((a) => [a.tier, a.cost_usd])).toEqual([
      [0, 0.012],
      [1, 0.25],
      [1, 0.25],
    ]);
    const pr = await h.forge.findPullRequest(job.repo, branchName(job));
    expect(pr!.body).toContain('after tier 1 local-small spent its budget ($0.0120)');
    expect(pr!.body).toContain('| 2 | local-big | ollama | qwen2.5-coder:7b | succeeded | $0.5000 |');
  });

  it("an outer retry resumes at the tier it was on, with the earlier tier's feedback still in its prompt", async () => {
    h = await chainHarness({ escalation: ['local-small', 'local-big'] });
    await h.agent(failsItsTests, 'local-small');
    await h.agent(succeedsFromTheBase, 'local-big');
    const big = createScriptAgent({ module: h.agentModule('local-big') });
    let bigCalls = 0;
    // Tier 2's model server is down on the first delivery: a transient crash, an outer retry.
    const flaky: Agent = {
      ...big,
      run: async (req) => {
        bigCalls += 1;
        if (bigCalls === 1)
          return {
            exitCode: null,
            signal: null,
            timedOut: false,
            durationMs: 1,
            outputTail: '',
            changedFiles: [],
            outcome: 'error',
            detail: 'connection refused',
          };
        return big.run(req);
      },
    };
    const small = createScriptAgent({ module: h.agentModule('local-small') });
    h.deps.agentFor = (name) => (name === 'local-big' ? flaky : small);
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run).toMatchObject({ outcome: 'succeeded' });
    expect(run!.attempts.map((a) => [a.n, a.outcome, a.error?.code])).toEqual([
      [1, 'retrying', 'agent_crashed'],
      [2, 'succeeded', undefined],
    ]);
    // Delivery 2 ran tier 2 only: tier 1 is not tried again.
    expect(run!.agent_runs.filter((a) => a.attempt === 2).map((a) => a.tier)).toEqual([1, 1]);
    expect(run!.agent_runs.filter((a) => a.tier === 0)).toHaveLength(4);
    expect(run!.tiers?.map((t) => [t.tier, t.outcome])).toEqual([
      [0, 'failed'],
      [1, 'succeeded'],
    ]);
  });

  it('a job that names a chain runs that chain, and one that names an agent runs no chain', async () => {
    h = await chainHarness({ escalation: ['local-small'], 'cheap-first': ['local-big'] });
    await h.agent(failsItsTests, 'local-small');
    await h.agent(implementsFeature, 'local-big');
    await h.agent(implementsFeature, 'script');
    const named = h.job({ agent: 'cheap-first' });
    const plain = h.job({ agent: 'script' });
    await h.drain(named, plain);
    const chained = await h.store.get(named.id);
    expect(chained).toMatchObject({ outcome: 'succeeded', chain: { name: 'cheap-first', tiers: ['local-big'] } });
    expect(chained!.tiers?.map((t) => [t.profile, t.outcome])).toEqual([['local-big', 'succeeded']]);
    const single = await h.store.get(plain.id);
    expect(single).toMatchObject({ outcome: 'succeeded' });
    expect(single!.tiers).toBeUndefined();
    expect(single!.agent_runs.every((a) => a.tier === undefined)).toBe(true);
  });
});
