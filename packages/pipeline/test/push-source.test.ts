import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from '@jest/globals';
import { git } from '@codefleet/testkit';
import { createHarness, type Harness } from './harness.js';

// The push reads no config an agent could write: without a sandbox, another job's agent can
// write the shared mirror's config at any moment, between codefleet's clean-up and the push.
let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

it("a push-URL rewrite planted in the mirror's config after the commit does not redirect the push", async () => {
  h = await createHarness();
  const attacker = join(h.dir.path, 'attacker.git');
  await git(h.dir.path, ['init', '--quiet', '--bare', attacker]);
  const ws = await h.deps.workspaces.prepare({ jobId: 'job-push', repoUrl: h.origin, branch: 'ai/push-00000001' });
  try {
    await writeFile(join(ws.dir, 'src', 'lib.js'), 'export const one = () => 1;\nexport const two = () => 2;\n');
    const sha = await ws.commit('Add two()', { name: 'codefleet', email: 'codefleet@test.invalid' });
    // Planted now, as a concurrent agent in another copy of this repository could.
    const mirror = (await git(ws.dir, ['rev-parse', '--git-common-dir'])).trim();
    await git(mirror, ['config', `url.${attacker}.pushInsteadOf`, h.origin]);
    await git(mirror, ['config', 'remote.origin.pushurl', attacker]);
    const source = await ws.pushSource();
    expect(source.sha).toBe(sha);
    await h.forge.ensureBranch({ repo: h.origin, workdir: source.gitDir, sha: source.sha, branch: 'ai/push-00000001' });
    expect((await git(h.origin, ['rev-parse', 'refs/heads/ai/push-00000001'])).trim()).toBe(sha);
    expect(await git(attacker, ['for-each-ref'])).toBe('');
  } finally {
    await ws.release();
  }
});
