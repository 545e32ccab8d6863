import { describe, expect, it } from '@jest/globals';
import { parseRun } from '../src/run.js';
import { addAgentRun, endTier, newRun, setChain, startAttempt, startTier, tierCost } from '../src/run-update.js';
import { agentRunFixture, jobFixture } from './fixtures.js';

const now = new Date('2024-05-01T10:00:00Z');
const small = { profile: 'local-1_5b', agent: 'ollama', model: 'qwen2.5-coder:1.5b' };

function chainRun() {
  let run = startAttempt(newRun(jobFixture(), { runId: 'r1', now }), { workerId: 'w', now });
  run = setChain(run, { name: 'escalation', tiers: ['local-1_5b', 'local-7b', 'claude'] }, { now });
  return startTier(run, { tier: 0, ...small }, { now });
}

describe('escalation tiers in the run record', () => {
  it("a tier's cost is the sum of its own agent runs' cost_usd", () => {
    let run = chainRun();
    run = addAgentRun(run, agentRunFixture({ tier: 0, cost_usd: 0.002 }), { now });
    run = addAgentRun(run, agentRunFixture({ tier: 0, cost_usd: 0.003 }), { now });
    run = addAgentRun(run, agentRunFixture({ tier: 1, cost_usd: 0.5 }), { now });
    run = endTier(run, 0, { now, outcome: 'failed', detail: 'x'.repeat(5000) });
    expect(run.tiers?.[0]).toMatchObject({ tier: 0, outcome: 'failed', ended_at: now.toISOString() });
    expect(run.tiers?.[0]?.cost_usd).toBeCloseTo(0.005);
    expect(run.tiers?.[0]?.detail).toHaveLength(2000);
    expect(tierCost(run, 2)).toBeUndefined();
    // What the helpers write is what the schema reads back.
    expect(parseRun(JSON.parse(JSON.stringify(run)))).toEqual(run);
  });

  it('a tier started again (a retried delivery) is reopened, not added twice', () => {
    let run = endTier(chainRun(), 0, { now, outcome: 'error', detail: 'agent timed out' });
    const later = new Date('2024-05-01T10:05:00Z');
    run = startTier(run, { tier: 0, ...small }, { now: later });
    expect(run.tiers).toEqual([{ tier: 0, ...small, started_at: now.toISOString() }]);
    expect(() => endTier(run, 1, { now, outcome: 'failed' })).toThrow(
      expect.objectContaining({ code: 'invalid_transition' }),
    );
  });
});
