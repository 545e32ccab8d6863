import { describe, expect, it } from '@jest/globals';
import { CodefleetError } from '@codefleet/core';
import { createPullRequestStates, pullRequestKey } from '../src/index.js';
import type { PullRequestState } from '../src/index.js';

// A forge whose answers the test scripts; counts the requests and how many ran at once.
function scripted(answer: (repo: string, number: number, signal?: AbortSignal) => Promise<PullRequestState>) {
  const stats = { calls: 0, inFlight: 0, maxInFlight: 0 };
  const forge = {
    async pullRequestState(repo: string, number: number, signal?: AbortSignal) {
      stats.calls += 1;
      stats.inFlight += 1;
      stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
      try {
        return await answer(repo, number, signal);
      } finally {
        stats.inFlight -= 1;
      }
    },
  };
  return { forge, stats };
}

const keys = (n: number) => Array.from({ length: n }, (_, i) => ({ repo: 'acme/w', number: i + 1 }));
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('createPullRequestStates', () => {
  it('asks a few at a time and caches the answers for the ttl', async () => {
    const { forge, stats } = scripted(async (_r, n) => {
      await tick();
      return n % 2 === 0 ? 'merged' : 'open';
    });
    let clock = 0;
    const states = createPullRequestStates(forge, { concurrency: 3, ttlMs: 1_000, now: () => clock });
    const first = await states.statesOf(keys(10));
    expect(first.get(pullRequestKey({ repo: 'acme/w', number: 2 }))).toEqual({ state: 'merged' });
    expect(first.size).toBe(10);
    expect(stats.maxInFlight).toBe(3);
    await states.statesOf(keys(10));
    expect(stats.calls).toBe(10);
    clock = 1_000;
    await states.statesOf(keys(1));
    expect(stats.calls).toBe(11);
  });

  it('never throws: an outage answers why, once, and the rest are not sent', async () => {
    const { forge, stats } = scripted(async () => {
      throw new CodefleetError('forge_rejected', 'GitHub refused the token (401)');
    });
    const states = createPullRequestStates(forge, { concurrency: 1 });
    const out = await states.statesOf(keys(5));
    expect([...out.values()].every((a) => a.state === undefined && a.why.includes('401'))).toBe(true);
    expect(stats.calls).toBe(1);
  });

  it('bounds each request: a forge that never answers is "did not answer", not a hang', async () => {
    const { forge } = scripted(
      (_r, _n, signal) =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(new CodefleetError('cancelled', 'stopped')));
        }),
    );
    const states = createPullRequestStates(forge, { timeoutMs: 50 });
    const out = await states.statesOf(keys(1));
    expect(out.get('acme/w#1')).toEqual({ why: 'forge did not answer within 50 ms' });
  });

  it('answers not found per pull request and keeps asking the others', async () => {
    const { forge, stats } = scripted(async (_r, n) => {
      if (n === 1) throw new CodefleetError('forge_not_found', 'no pull request #1');
      return 'closed';
    });
    const out = await createPullRequestStates(forge, { concurrency: 1 }).statesOf(keys(3));
    expect(out.get('acme/w#1')).toEqual({ why: 'not found on the forge' });
    expect(out.get('acme/w#3')).toEqual({ state: 'closed' });
    expect(stats.calls).toBe(3);
  });
});
