import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { addAgentRun, type AgentRun } from '@codefleet/core';
import { failedRun, jobOf, openBackends, startDashboard, token, type Backends } from './helpers.js';

// The run page as the server renders it: models, model calls, cost and tiers, every value
// that an agent supplied escaped.

let b: Backends;
let dash: Awaited<ReturnType<typeof startDashboard>>;
beforeEach(async () => {
  b = await openBackends();
  dash = await startDashboard(b);
});
afterEach(async () => {
  await dash.close();
  await b.dispose();
});

const agentRun = (overrides: Partial<AgentRun>): AgentRun => ({
  pass: 'implement',
  attempt: 1,
  inner_attempt: 1,
  agent: 'ollama',
  exit_code: 0,
  signal: null,
  timed_out: false,
  duration_ms: 900,
  output_tail: '',
  changed_files: ['src/a.js'],
  outcome: 'changed',
  ...overrides,
});

const get = async (path: string) =>
  (await fetch(`${dash.base}${path}`, { headers: { authorization: `Bearer ${token}`, accept: 'text/html' } })).text();
const page = async (id: string) => get(`/runs/${id}`);

describe('run page: models, calls, cost, tiers', () => {
  it("shows each agent run's model, tokens, cost and calls, the run's total and the tiers, all escaped", async () => {
    let run = failedRun(jobOf('costly-1'));
    run = addAgentRun(
      run,
      agentRun({
        model: 'qwen2.5-coder:7b',
        tokens: { prompt: 3_000, completion: 750 },
        cost_usd: 0.0045,
        tier: 0,
        model_calls: [
          {
            provider: 'ollama',
            model: 'qwen2.5-coder:7b',
            prompt_tokens: 1_000,
            completion_tokens: 500,
            latency_ms: 850,
            cost_usd: 0.002,
            outcome: 'unusable',
          },
          {
            provider: 'ollama',
            model: 'qwen2.5-coder:7b',
            prompt_tokens: 2_000,
            completion_tokens: 250,
            latency_ms: 1_250,
            cost_usd: 0.0025,
            outcome: 'ok',
          },
        ],
      }),
      { now: new Date() },
    );
    run = addAgentRun(
      run,
      agentRun({
        agent: 'claude',
        pass: 'test',
        model: '<img src=x onerror=alert(1)>',
        cost_usd: 0.1,
        tier: 1,
        model_calls: [
          {
            provider: '<b>claude</b>',
            model: '<img src=x onerror=alert(1)>',
            prompt_tokens: 10,
            completion_tokens: 20,
            latency_ms: 61_000,
            outcome: '"><script>x()</script>',
          },
        ],
      }),
      { now: new Date() },
    );
    run = addAgentRun(run, agentRun({ agent: 'script' }), { now: new Date() });
    run = {
      ...run,
      tiers: [
        {
          tier: 0,
          profile: 'local',
          agent: 'ollama',
          model: 'qwen2.5-coder:7b',
          started_at: run.created_at,
          outcome: 'failed',
          cost_usd: 0.0045,
          detail: '<script>alert("tier")</script>',
        },
        {
          tier: 1,
          profile: 'strongest',
          agent: 'claude',
          started_at: run.created_at,
          outcome: 'succeeded',
          cost_usd: 0.1,
        },
      ],
    };
    await b.store.save(run);
    const text = await page('costly-1');

    expect(text).toContain(
      'cost <strong class="cost">$0.1045</strong> (1 agent run(s) without a known cost not included)',
    );
    expect(text).toContain(
      ' · model <code>qwen2.5-coder:7b</code> · 3000 in / 750 out tokens · <span class="cost">$0.0045</span> · tier 0</summary>',
    );
    expect(text).toContain(
      '<tr><td>ollama</td><td><code>qwen2.5-coder:7b</code></td><td>1000</td><td>500</td><td>850ms</td><td>$0.0020</td><td>unusable</td></tr>',
    );
    expect(text).toContain(
      '<tr><td>ollama</td><td><code>qwen2.5-coder:7b</code></td><td>2000</td><td>250</td><td>1.2s</td><td>$0.0025</td><td>ok</td></tr>',
    );
    expect(text).toContain(
      '<tr><td>&lt;b&gt;claude&lt;/b&gt;</td><td><code>&lt;img src=x onerror=alert(1)&gt;</code></td><td>10</td><td>20</td><td>1m 01s</td><td>unknown</td><td>&quot;&gt;&lt;script&gt;x()&lt;/script&gt;</td></tr>',
    );
    expect(text).toContain('<h2>Escalation tiers</h2>');
    expect(text).toContain(
      '<tr><td>0</td><td>local</td><td>ollama <code>qwen2.5-coder:7b</code></td><td>failed</td><td>$0.0045</td><td>&lt;script&gt;alert(&quot;tier&quot;)&lt;/script&gt;</td></tr>',
    );
    expect(text).toContain(
      '<tr><td>1</td><td>strongest</td><td>claude</td><td>succeeded</td><td>$0.1000</td><td></td></tr>',
    );
    expect(text).not.toMatch(/<img|<script>alert|<b>claude/);
    // The runs list has the run's total in its cost column.
    const list = await get('/runs');
    expect(list).toMatch(/<a href="\/runs\/costly-1">[^]*?<td class="cost">\$0\.1045<\/td>/);
  });

  it('a run whose agents report no cost, calls or tiers shows none of it', async () => {
    await b.store.save(addAgentRun(failedRun(jobOf('plain-1')), agentRun({}), { now: new Date() }));
    const text = await page('plain-1');
    expect(text).toContain('<h2>Agent runs</h2>');
    expect(text).not.toMatch(/class="cost"|model-calls|Escalation tiers/);
    // Nor a cost in the runs list: empty, never $0.
    expect(await get('/runs')).toMatch(/<a href="\/runs\/plain-1">[^]*?<td class="cost"><\/td>/);
  });
});
