// The sandbox's per-run limits and network, against a prompt-injected agent in whole jobs:
// bombs end their runs and are fed back; the fleet's Redis on the host is out of reach.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { defaultLimits } from '@codefleet/sandbox';
import { git, startRedis } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { createHarness, implementsFeature, testSandbox, type Harness, outcomeOf } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('the sandbox bounds a prompt-injected agent', () => {
  it('a fork bomb and a memory bomb end their runs with resource_limit, fed back; the job and the next one on the worker succeed', async () => {
    h = await createHarness();
    // Small limits keep the bombs short; the mechanism is the default one.
    h.deps.sandbox = await testSandbox(h.dir.path, [join(h.dir.path, 'agent')], {
      limits: { ...defaultLimits, processes: 128, memoryMb: 384 },
    });
    await h.agent(`
const { spawnSync } = await import('node:child_process');
if (pass === 'implement' && attempt === 1) {
  // exec: a shell that forked its sleep could find no fork left and return at once, and
  // this run must not go on to implement. It waits to be stopped, whatever wakes it.
  spawnSync('sh', ['-c', 'bomb() { bomb | bomb & }; bomb; exec sleep 600'], { stdio: 'inherit' });
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}
if (pass === 'implement' && attempt === 2) { const kept = []; for (;;) kept.push(Buffer.alloc(8 << 20, 1)); }
${implementsFeature}`);
    const bombed = h.job({ title: 'Add two()' });
    const next = h.job({ title: 'Add two() again' });
    await h.drain(bombed, next);
    const run = await h.store.get(bombed.id);
    expect(outcomeOf(run)).toBe('succeeded');
    // Each bomb named; a run the bomb's aftermath also stopped may add another entry of the same limit.
    expect([...new Set(run?.sandbox?.resource_limits.map((hit) => hit.limit))]).toEqual(['processes', 'memory']);
    const [first, second] = run!.agent_runs;
    expect(first).toMatchObject({ outcome: 'failed', inner_attempt: 1 });
    expect(second).toMatchObject({ outcome: 'failed', inner_attempt: 2 });
    expect(first!.output_tail).toContain('codefleet: resource_limit: processes');
    // What the agent is told next time: the limit, by name and setting. How much was seen is
    // there when the warden's poll saw it first; the kernel's OOM kill may come before it.
    expect(second!.output_tail).toMatch(
      /codefleet: resource_limit: memory — (\d+ MiB seen, )?the limit is 384 MiB \(sandbox\.limits\.memory_mb\)/,
    );
    expect(outcomeOf(await h.store.get(next.id))).toBe('succeeded');
  });

  it("cannot reach the fleet's Redis on the host's loopback: the forge fails, the refusal is in the run record", async () => {
    const redis = await startRedis();
    try {
      await redis.command('SET', 'codefleet:forged', 'no');
      h = await createHarness();
      await h.agent(`
const { spawnSync } = await import('node:child_process');
if (pass === 'implement') {
  const direct = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', '${redis.port}', 'SET', 'codefleet:forged', 'yes'], { encoding: 'utf8' });
  const proxied = spawnSync('curl', ['-sS', '-m', '20', '--noproxy', '', '-p', '-x', process.env.HTTPS_PROXY, 'telnet://127.0.0.1:${redis.port}'], { encoding: 'utf8', input: '' });
  fs.writeFileSync(path.join(workdir, 'forge.txt'), direct.stdout + direct.stderr + proxied.stdout + proxied.stderr);
}
${implementsFeature}`);
      const job = h.job({ title: 'Add two()' });
      await h.drain(job);
      const run = await h.store.get(job.id);
      expect(outcomeOf(run)).toBe('succeeded');
      expect(await redis.command('GET', 'codefleet:forged')).toBe('$2');
      const text = await git(h.origin, ['log', '-p', '--format=%H %s', `main..${branchName(job)}`]);
      expect(text).toMatch(/Could not connect to Redis|Connection refused/);
      expect(text).toMatch(/CONNECT tunnel failed, response 403/);
      expect(run?.sandbox).toMatchObject({
        network_refused_total: 1,
        network_refused: [{ destination: `127.0.0.1:${redis.port}` }],
      });
    } finally {
      await redis.stop();
    }
  });
});
