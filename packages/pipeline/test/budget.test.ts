import { afterEach, describe, expect, it } from '@jest/globals';
import { createJob, newRun, type AgentRun, type RunRecord } from '@codefleet/core';
import { SqliteRunStore } from '@codefleet/store';
import { budgetsLeft, budgetStop, pricedRun } from '../src/budget.js';

const now = new Date(Date.UTC(2026, 10, 24, 23, 59, 0));
const job = createJob(
  { repo: '/srv/r', source: { kind: 'cli' }, title: 't', body: '', requested_by: 'me' },
  { id: 'job-1', now },
);
const agentRun = (cost: number | undefined, tier?: number, tokens?: number): AgentRun => ({
  pass: 'implement',
  attempt: 1,
  inner_attempt: 1,
  agent: 'a',
  exit_code: 0,
  signal: null,
  timed_out: false,
  duration_ms: 1,
  output_tail: '',
  changed_files: [],
  outcome: 'changed',
  ...(cost === undefined ? {} : { cost_usd: cost }),
  ...(tier === undefined ? {} : { tier }),
  ...(tokens === undefined ? {} : { tokens: { prompt: tokens, completion: 0 } }),
});
const runWith = (...runs: AgentRun[]): RunRecord => ({ ...newRun(job, { runId: 'job-1', now }), agent_runs: runs });
const agent = { name: 'a' };

let store: SqliteRunStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});
const deps = () => {
  store = new SqliteRunStore(':memory:');
  return { store, now: () => now };
};

describe('budgetsLeft', () => {
  it('gives the least of what is left of the job, the tier and the day, and says which', async () => {
    const d = deps();
    await d.store.addSpend('2026-11-24', 9.5);
    // Tier 1 spent 0.25 of its 1.00; the job 0.75 of its 5.00; the day 9.50 of its 10.00.
    const run = runWith(agentRun(0.5, 0), agentRun(0.25, 1));
    expect(await budgetsLeft(d, agent, run, { jobUsd: 5, tierUsd: 1, tier: 1, dayUsd: 10 })).toEqual({
      usd: 0.5,
      binding: { scope: 'day', spentUsd: 9.5, limitUsd: 10 },
    });
    expect(await budgetsLeft(d, agent, run, { jobUsd: 5, tierUsd: 1, tier: 1 })).toEqual({
      usd: 0.75,
      binding: { scope: 'tier', spentUsd: 0.25, limitUsd: 1 },
    });
    expect(await budgetsLeft(d, agent, run, {})).toEqual({});
    // The day is the UTC day of the clock: another day has spent nothing.
    expect(
      await budgetsLeft({ store: d.store, now: () => new Date(Date.UTC(2026, 10, 25)) }, agent, run, { dayUsd: 10 }),
    ).toMatchObject({ usd: 10 });
  });

  it('throws budget_exceeded with scope, spent and limit when a limit is reached before a run', async () => {
    const d = deps();
    const run = runWith(agentRun(0.5, 0), agentRun(0.3, 1));
    await expect(budgetsLeft(d, agent, run, { jobUsd: 5, tierUsd: 0.3, tier: 1 })).rejects.toMatchObject({
      code: 'budget_exceeded',
      verdict: 'permanent',
      details: { scope: 'tier', spent_usd: 0.3, limit_usd: 0.3 },
      message: "spent $0.3000 of the $0.3000 escalation tier budget (the tier's profiles.<name>.budget_usd)",
    });
    await expect(budgetsLeft(d, agent, run, { jobUsd: 0.8 })).rejects.toMatchObject({
      details: { scope: 'job', spent_usd: 0.8, limit_usd: 0.8 },
    });
    await d.store.addSpend('2026-11-24', 2);
    await expect(budgetsLeft(d, agent, run, { dayUsd: 2 })).rejects.toMatchObject({
      details: { scope: 'day', spent_usd: 2, limit_usd: 2 },
    });
  });

  it('keeps the token budget as it was: what is left, and budget_exceeded once spent', async () => {
    const d = deps();
    expect(
      await budgetsLeft(d, { name: 'a', tokenBudget: 1_000 }, runWith(agentRun(undefined, undefined, 400)), {}),
    ).toEqual({ tokens: 600 });
    await expect(
      budgetsLeft(d, { name: 'a', tokenBudget: 400 }, runWith(agentRun(undefined, undefined, 400)), {}),
    ).rejects.toMatchObject({ code: 'budget_exceeded', details: { tokens_spent: 400, token_budget: 400 } });
  });
});

describe('budgetStop', () => {
  it('names the money limit reached, else the one the run was given, else the token budget', async () => {
    const d = deps();
    const run = runWith(agentRun(0.6));
    await expect(budgetStop(d, agent, run, { jobUsd: 0.5 }, {}, 'x')).resolves.toMatchObject({
      details: { scope: 'job', spent_usd: 0.6, limit_usd: 0.5 },
    });
    const given = { usd: 0.4, binding: { scope: 'job' as const, spentUsd: 0, limitUsd: 1 } };
    await expect(budgetStop(d, agent, run, { jobUsd: 1 }, given, 'x')).resolves.toMatchObject({
      details: { scope: 'job', spent_usd: 0.6, limit_usd: 1 },
      message: 'agent a: spent $0.6000 of the $1.0000 job budget (costs.budget_usd.job)',
    });
    await expect(
      budgetStop(d, { name: 'a', tokenBudget: 10 }, run, {}, { tokens: 10 }, 'prompt too long'),
    ).resolves.toMatchObject({
      message: 'agent a: prompt too long (agents.a.token_budget)',
      details: { token_budget: 10 },
    });
  });
});

describe('pricedRun', () => {
  const base = {
    exitCode: 0,
    signal: null,
    timedOut: false,
    durationMs: 1,
    outputTail: '',
    changedFiles: [],
    outcome: 'changed' as const,
  };
  const prices = { 'm*': { inputPerMtok: 2, outputPerMtok: 8 } };
  it('believes a reported cost, else prices tokens at the reported or configured model; unknown stays unknown', () => {
    expect(pricedRun({ ...base, costUsd: 0.5, tokens: { prompt: 1, completion: 1 } }, {}, prices).costUsd).toBe(0.5);
    expect(
      pricedRun({ ...base, tokens: { prompt: 1_000_000, completion: 1_000_000 } }, { model: 'm-1' }, prices),
    ).toMatchObject({ model: 'm-1', costUsd: 10 });
    expect(
      pricedRun({ ...base, model: 'other', tokens: { prompt: 1, completion: 1 } }, { model: 'm-1' }, prices),
    ).not.toHaveProperty('costUsd');
    expect(pricedRun({ ...base, tokens: { prompt: 1, completion: 1 } }, {}, prices)).not.toHaveProperty('costUsd');
    expect(pricedRun({ ...base, costUsd: Number.NaN }, { model: 'm' }, prices)).not.toHaveProperty('costUsd');
  });
});
