import { afterEach, describe, expect, it } from '@jest/globals';
import type { Agent, AgentRunRequest, AgentRunResult } from '@codefleet/agents';
import { utcDay } from '@codefleet/store';
import { createHarness, implementsFeature, type Harness, outcomeOf } from './harness.js';

// Money budgets through runJob on real parts: the real script agent edits the copy, wrapped
// in an Agent that reports what a CLI reports (a cost, or tokens and a model) and keeps the
// requests it was given.

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

/** The harness's script agent, reporting `report` on top of what it did; `seen` keeps each request. */
function reporting(
  base: Agent,
  report: (req: AgentRunRequest) => Partial<AgentRunResult>,
  model?: string,
): { agent: Agent; seen: AgentRunRequest[] } {
  const seen: AgentRunRequest[] = [];
  const agent: Agent = {
    name: 'priced',
    ...(model === undefined ? {} : { model }),
    run: async (req) => {
      seen.push(req);
      return { ...(await base.run(req)), ...report(req) };
    },
  };
  return { agent, seen };
}

// A build that fails differently every time: nothing the agent does helps.
const breaksTheBuild = "fs.writeFileSync(path.join(workdir, 'src', 'bad.js'), 'export const = ' + runs + ';\\n');";

describe('money budgets (costs.budget_usd, costs.prices)', () => {
  it('each run gets what is left; reaching the job budget before another run ends the job budget_exceeded, with spent and limit', async () => {
    h = await createHarness({ budgetUsd: { job: 0.5 } });
    await h.agent(breaksTheBuild);
    const { agent, seen } = reporting(h.deps.agentFor('script'), () => ({ costUsd: 0.3 }));
    h.deps.agentFor = () => agent;
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    // 0.5 before the first run, 0.2 before the second; none for a third: 0.6 is past 0.5.
    expect(seen.map((req) => req.budgetUsd)).toEqual([0.5, expect.closeTo(0.2, 10)]);
    expect(run!.agent_runs.map((a) => a.cost_usd)).toEqual([0.3, 0.3]);
    expect(run).toMatchObject({ outcome: 'failed', error: { code: 'budget_exceeded', verdict: 'permanent' } });
    expect(run!.error!.message).toBe('spent $0.6000 of the $0.5000 job budget (costs.budget_usd.job)');
    // Said in the final report, and added to the fleet's day.
    const comments = await h.forge.listComments(job.repo, { kind: 'task', key: job.idempotency_key });
    expect(comments.map((c) => c.body)).toEqual([expect.stringContaining('spent $0.6000 of the $0.5000 job budget')]);
    expect(await h.store.spentOn(utcDay(new Date()))).toBeCloseTo(0.6, 10);
    expect((await h.queue.stats()).deadLetter).toBe(1);
  });

  it('prices tokens at the configured model when the agent reports no cost, and passes the price table', async () => {
    const prices = { 'qwen-test*': { inputPerMtok: 1, outputPerMtok: 4 } };
    h = await createHarness({ prices });
    await h.agent(implementsFeature);
    const { agent, seen } = reporting(
      h.deps.agentFor('script'),
      () => ({ tokens: { prompt: 100_000, completion: 10_000 } }),
      'qwen-test:7b',
    );
    h.deps.agentFor = () => agent;
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(outcomeOf(run)).toBe('succeeded');
    // 0.1 M prompt tokens at $1 + 0.01 M completion tokens at $4 = $0.14 a run.
    expect(run!.agent_runs.map((a) => a.cost_usd)).toEqual([expect.closeTo(0.14, 10), expect.closeTo(0.14, 10)]);
    expect(seen.every((req) => req.prices === prices && req.budgetUsd === undefined)).toBe(true);
    expect(await h.store.spentOn(utcDay(new Date()))).toBeCloseTo(0.28, 10);
    // Attributed to the job's repository, the agent and the priced model, for the dashboard's top spenders.
    const today = utcDay(new Date());
    const { top } = await h.store.fleetStats({ from: today, to: today });
    expect(top).toEqual({
      repo: [{ name: job.repo, usd: expect.closeTo(0.28, 10) }],
      agent: [{ name: 'priced', usd: expect.closeTo(0.28, 10) }],
      model: [{ name: 'qwen-test:7b', usd: expect.closeTo(0.28, 10) }],
    });
  });

  it("a run that stops for its budget ends the job at once, naming the limit it was given (the fleet day's, the least left)", async () => {
    h = await createHarness({ budgetUsd: { job: 5, day: 1 } });
    const today = utcDay(new Date());
    await h.store.addSpend(today, 0.9);
    await h.agent(breaksTheBuild);
    const { agent, seen } = reporting(h.deps.agentFor('script'), () => ({
      costUsd: 0.05,
      budgetExceeded: true,
      detail: 'stopped: the budget is spent',
    }));
    h.deps.agentFor = () => agent;
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(seen.map((req) => req.budgetUsd)).toEqual([expect.closeTo(0.1, 10)]);
    expect(run).toMatchObject({ outcome: 'failed', error: { code: 'budget_exceeded', verdict: 'permanent' } });
    expect(run!.error!.message).toBe(
      "agent priced: spent $0.9500 of the $1.0000 fleet's daily budget (costs.budget_usd.day)",
    );
  });

  it('a cost the agent reports that is no number of dollars is not believed: its tokens are priced instead', async () => {
    h = await createHarness({ prices: { m: { inputPerMtok: 10, outputPerMtok: 0 } } });
    await h.agent(implementsFeature);
    const { agent } = reporting(h.deps.agentFor('script'), () => ({
      costUsd: -5,
      model: 'm',
      tokens: { prompt: 1_000, completion: 0 },
    }));
    h.deps.agentFor = () => agent;
    const job = h.job();
    await h.drain(job);
    const run = await h.store.get(job.id);
    expect(run!.agent_runs.map((a) => [a.cost_usd])).toEqual([[expect.closeTo(0.01, 10)], [expect.closeTo(0.01, 10)]]);
  });
});
