import { describe, expect, it } from '@jest/globals';
import { addAgentRun, endTier, newRun, setChain, startAttempt, startTier } from '@codefleet/core';
import { renderTaskNote } from '../src/task-note.js';
import { tierSummary } from '../src/tier-note.js';
import { agentRunFixture, jobFixture } from '@codefleet/testkit';

const now = new Date('2024-05-01T10:00:00Z');
const small = { profile: 'local-1_5b', agent: 'ollama', model: 'qwen2.5-coder:1.5b' };
const big = { profile: 'local-7b', agent: 'ollama', model: 'qwen2.5-coder:7b' };

function chainRun() {
  let run = startAttempt(newRun(jobFixture(), { runId: 'r1', now }), { workerId: 'w', now });
  run = setChain(run, { name: 'escalation', tiers: ['local-1_5b', 'local-7b', 'claude'] }, { now });
  return startTier(run, { tier: 0, ...small }, { now });
}

describe('the escalation section of the task note', () => {
  it('the PR body says which tier solved it and after what', () => {
    let run = endTier(chainRun(), 0, { now, outcome: 'failed', detail: 'build failed' });
    run = startTier(run, { tier: 1, ...big }, { now });
    run = addAgentRun(run, agentRunFixture({ tier: 1, cost_usd: 0.0123 }), { now });
    run = endTier(run, 1, { now, outcome: 'succeeded' });
    expect(tierSummary(run)).toBe(
      'Solved by tier 2 of 3: local-7b (ollama qwen2.5-coder:7b) after tier 1 local-1\\_5b exhausted its fix attempts',
    );
    const note = renderTaskNote(run);
    expect(note).toContain('## Escalation (chain `escalation`)');
    expect(note).toContain('| 2 | local-7b | ollama | qwen2.5-coder:7b | succeeded | $0.0123 |');
  });

  it('says when no tier solved it, and names a tier that runs an agent directly by that name', () => {
    let run = endTier(chainRun(), 0, { now, outcome: 'budget_exceeded' });
    run = startTier(run, { tier: 1, profile: 'claude', agent: 'claude' }, { now });
    run = endTier(run, 1, { now, outcome: 'failed' });
    expect(tierSummary(run)).toBe(
      'No tier of 3 solved it: tier 1 local-1\\_5b spent its budget and tier 2 claude exhausted its fix attempts.',
    );
    run = startTier(run, { tier: 2, profile: 'claude', agent: 'claude' }, { now });
    run = endTier(run, 2, { now, outcome: 'succeeded' });
    expect(tierSummary(run)).toMatch(
      /^Solved by tier 3 of 3: claude after tier 1 .* and tier 2 claude exhausted its fix attempts$/,
    );
    expect(tierSummary({})).toBeUndefined();
  });
});
