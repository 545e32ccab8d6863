import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import { git, startFixture } from '@codefleet/testkit';
import { createLocalForge } from '../src/index.js';
import { forgeGitEnv } from './contract/index.js';
import { openLocal } from './local-harness.js';

// A Redis or SQS fleet: each host has its own data directory, so its own forge file, and
// every host pushes to the same origin. Two hosts once both numbered their first PR #1.
describe('LocalForge in a fleet: hosts with their own files sharing one origin', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('numbers pull requests uniquely per repository across processes and hosts', async () => {
    const script = fileURLToPath(new URL('./fixtures/race-forge.mjs', import.meta.url));
    const o = await openLocal();
    cleanups.push(() => o.dispose());
    const hosts = { a: ['ai/issue-1', 'ai/issue-2', 'ai/issue-3'], b: ['ai/issue-4', 'ai/issue-5', 'ai/issue-6'] };
    const workdir = await o.makeWorkdir('fleet');
    for (const branch of [...hosts.a, ...hosts.b]) await o.forge.ensureBranch({ repo: o.repo, workdir, branch });
    const dbPaths = { a: join(o.scratch, 'host-a.sqlite'), b: join(o.scratch, 'host-b.sqlite') };
    const startAt = Date.now() + 1_500;
    // Two worker processes per host, each ensuring every pull request of its host.
    const workers = (['a', 'b'] as const).flatMap((host) =>
      [1, 2].map((n) =>
        startFixture(script, [
          JSON.stringify({
            dbPath: dbPaths[host],
            gitEnv: forgeGitEnv(),
            repo: o.repo,
            heads: hosts[host],
            base: o.base,
            startAt,
            worker: `${host}${n}`,
          }),
        ]),
      ),
    );
    const exits = await Promise.all(workers.map((w) => w.exited));
    expect({ exits: exits.map((e) => e.exitCode), stderr: workers.map((w) => w.stderr) }).toMatchObject({
      exits: [0, 0, 0, 0],
    });
    type Line = { head: string; pr: { number: number; created: boolean } };
    const lines = workers.flatMap((w) =>
      w.lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Line),
    );
    const numberOf = new Map<string, number>();
    for (const line of lines) {
      expect(numberOf.get(line.head) ?? line.pr.number).toBe(line.pr.number);
      numberOf.set(line.head, line.pr.number);
    }
    expect(numberOf.size).toBe(6);
    // No number was given to two pull requests, whichever host opened them.
    expect(new Set(numberOf.values()).size).toBe(6);
    // Each claim is a ref in the origin; a host's own file holds its own pull requests.
    const claimed = (await git(o.originDir, ['for-each-ref', '--format=%(refname)', 'refs/codefleet/pulls/'])).split(
      '\n',
    );
    for (const number of numberOf.values()) expect(claimed).toContain(`refs/codefleet/pulls/${number}`);
    const hostB = createLocalForge({ dbPath: dbPaths.b, gitEnv: forgeGitEnv() });
    try {
      expect((await hostB.getPullRequest(o.repo, numberOf.get('ai/issue-4')!)).head).toBe('ai/issue-4');
      // Host b's next pull request continues above every number claimed in the fleet
      // (a process that lost the race to open a head left its claim unused).
      await o.forge.ensureBranch({ repo: o.repo, workdir, branch: 'ai/issue-7' });
      const next = await hostB.ensurePullRequest({
        repo: o.repo,
        head: 'ai/issue-7',
        base: o.base,
        title: 'Next',
        body: '',
        draft: false,
      });
      expect(next.number).toBe(Math.max(...claimed.map((ref) => Number(ref.split('/').at(-1)))) + 1);
    } finally {
      hostB.close();
    }
  });
});
