// Real git for the local forge's tests: a bare origin seeded from a testkit repo, clones
// as working copies, and a forge on a fresh SQLite file.
import { join } from 'node:path';
import { createTempDir, createTempRepo, git } from '@codefleet/testkit';
import { forgeGitEnv, type OpenedForge } from './contract/index.js';
import { createLocalForge, type LocalForge } from '../src/index.js';

/** A bare origin on `main` with one commit, plus a scratch dir that dies with it. */
export async function createOrigin(): Promise<{ origin: string; scratch: string; dispose(): Promise<void> }> {
  const dir = await createTempDir('forge');
  const origin = join(dir.path, 'origin.git');
  await git(dir.path, ['init', '--quiet', '--bare', '--initial-branch=main', origin]);
  const seed = await createTempRepo({
    files: { 'README.md': '# sample\n', 'src/index.js': 'export const answer = 42;\n' },
  });
  try {
    await seed.git(['push', '--quiet', origin, 'main:refs/heads/main']);
  } finally {
    await seed.dispose();
  }
  return { origin, scratch: dir.path, dispose: () => dir.dispose() };
}

/** The contract harness for the local adapter, exposing the concrete forge too. */
export async function openLocal(): Promise<OpenedForge & { forge: LocalForge; dbPath: string; scratch: string }> {
  const { origin, scratch, dispose } = await createOrigin();
  const dbPath = join(scratch, 'forge.sqlite');
  const forge = createLocalForge({ dbPath, gitEnv: forgeGitEnv(), gitTimeoutMs: 30_000 });
  let clones = 0;
  return {
    forge,
    issues: forge,
    repo: origin,
    base: 'main',
    // The local forge keeps no issues, so any number is an issue it accepts.
    issueNumber: 7,
    originDir: origin,
    dbPath,
    scratch,
    makeWorkdir: async (branch) => {
      clones += 1;
      const path = join(scratch, `work-${clones}`);
      await git(scratch, ['clone', '--quiet', origin, path]);
      await git(path, ['checkout', '--quiet', '-b', branch, 'origin/main']);
      await git(path, ['commit', '--quiet', '--allow-empty', '-m', `work ${clones} on ${branch}`]);
      return path;
    },
    pullRequestCreations: async (head) => forge.pullRequestCreations(origin, head),
    settlePullRequest: async (number, how) => {
      if (how === 'merged') forge.mergePullRequest(origin, number);
      else forge.closePullRequest(origin, number);
    },
    dispose: async () => {
      forge.close();
      await dispose();
    },
  };
}
