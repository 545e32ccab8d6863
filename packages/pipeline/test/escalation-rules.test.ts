import { describe, expect, it } from '@jest/globals';
import { CodefleetError, type TierRecord } from '@codefleet/core';
import { chainOf, endsTier, resumeAt } from '../src/escalation.js';

// The pure decisions of escalation: which chain a job runs, what hands over to the next
// tier, and where a retried delivery picks up.
describe('escalation decisions', () => {
  const chains = { escalation: ['small', 'big', 'claude'], 'cheap-first': ['small', 'codex'] };

  it('a job naming no agent runs agents.escalation when it has tiers; a named chain or agent wins', () => {
    expect(chainOf({}, { chains })).toEqual({ name: 'escalation', tiers: ['small', 'big', 'claude'] });
    expect(chainOf({ agent: 'cheap-first' }, { chains })).toEqual({ name: 'cheap-first', tiers: ['small', 'codex'] });
    expect(chainOf({ agent: 'claude' }, { chains })).toBeUndefined();
    expect(chainOf({}, { chains: { escalation: [] } })).toBeUndefined();
    expect(chainOf({}, {})).toBeUndefined();
    // A patch job runs the patch engine, never a chain; `toString` is no chain.
    expect(chainOf({ patch: 'diff' }, { chains })).toBeUndefined();
    expect(chainOf({ agent: 'tostring' }, { chains })).toBeUndefined();
    expect(() => chainOf({ agent: 'escalation' }, { chains: { escalation: [] } })).toThrow(
      expect.objectContaining({ code: 'invalid_config', verdict: 'permanent' }),
    );
  });

  it('only exhausted fix attempts and a spent tier budget hand over', () => {
    expect(endsTier(new CodefleetError('fix_attempts_exhausted', 'x'))).toBe(true);
    expect(endsTier(new CodefleetError('budget_exceeded', 'x', { details: { scope: 'tier' } }))).toBe(true);
    // The job's own budget, the fleet's day, a token budget: the job stops.
    expect(endsTier(new CodefleetError('budget_exceeded', 'x', { details: { scope: 'job' } }))).toBe(false);
    expect(endsTier(new CodefleetError('budget_exceeded', 'x'))).toBe(false);
    expect(endsTier(new CodefleetError('agent_timeout', 'x'))).toBe(false);
    expect(endsTier(new Error('boom'))).toBe(false);
  });

  it('a retried delivery resumes at the tier it was on, or the next when its tier had just given up', () => {
    const chain = { name: 'escalation', tiers: chains.escalation };
    const tier = (n: number, outcome?: TierRecord['outcome']): TierRecord => ({
      tier: n,
      profile: chain.tiers[n] ?? 'x',
      agent: 'ollama',
      started_at: '2024-05-01T10:00:00Z',
      ...(outcome === undefined ? {} : { outcome }),
    });
    const recorded = { chain: { name: chain.name, tiers: [...chain.tiers] } };
    expect(resumeAt({}, chain)).toBe(0);
    expect(resumeAt({ ...recorded, tiers: [tier(0, 'failed'), tier(1)] }, chain)).toBe(1);
    expect(resumeAt({ ...recorded, tiers: [tier(0, 'failed'), tier(1, 'error')] }, chain)).toBe(1);
    expect(resumeAt({ ...recorded, tiers: [tier(0, 'budget_exceeded')] }, chain)).toBe(1);
    expect(resumeAt({ ...recorded, tiers: [tier(0, 'failed'), tier(1, 'failed'), tier(2, 'failed')] }, chain)).toBe(2);
    // The config changed the chain in between: start over.
    expect(
      resumeAt(
        { chain: { name: 'escalation', tiers: ['small', 'claude'] }, tiers: [tier(0, 'failed'), tier(1)] },
        chain,
      ),
    ).toBe(0);
  });
});
