/**
 * Agents learn whether codefleet's sandbox isolates their runs (`req.isolated`): a CLI with
 * a sandbox of its own (Codex) must turn it off inside codefleet's, where it cannot nest,
 * and keep it where codefleet's is `none`.
 */
import { afterEach, expect, it } from '@jest/globals';
import type { Agent, AgentRunRequest } from '@codefleet/agents';
import { createHarness, implementsFeature, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

it('every agent run is told whether the sandbox isolates it', async () => {
  h = await createHarness();
  await h.agent(implementsFeature);
  const seen: AgentRunRequest['isolated'][] = [];
  const agentFor = h.deps.agentFor;
  h.deps.agentFor = (...args: Parameters<typeof agentFor>): Agent => {
    const agent = agentFor(...args);
    return {
      ...agent,
      run: (req) => {
        seen.push(req.isolated);
        return agent.run(req);
      },
    };
  };
  const job = h.job({ title: 'Add two()' });
  await h.drain(job);
  expect(await h.store.get(job.id)).toMatchObject({ outcome: 'succeeded' });
  expect(seen).toEqual([h.deps.sandbox.mode !== 'none', h.deps.sandbox.mode !== 'none']);
  // This host's test sandbox is bubblewrap unless CODEFLEET_TEST_SANDBOX=none asks otherwise.
  if (process.env.CODEFLEET_TEST_SANDBOX !== 'none' && process.platform === 'linux') expect(seen[0]).toBe(true);
});
