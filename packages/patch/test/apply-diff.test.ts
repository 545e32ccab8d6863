/**
 * The engine holds its own reading of a diff against git's (`git apply --numstat`, forwards
 * and reversed, and `--summary`). With the installed git the two agree (the oracle property
 * in diff-headers.test.ts); here a git that reads more than the checker stands in for a git
 * version or a header form the port does not know, and the diff must be refused.
 */
import { existsSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempRepo, gitTestEnv, type TempRepo } from '@codefleet/testkit';
import { applyDiff } from '../src/apply-diff.js';
import { openGit, type PatchGit } from '../src/git.js';
import { defaultProtected } from '../src/index.js';

const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' };
const create = [
  'diff --git a/new.txt b/new.txt',
  'new file mode 100644',
  '--- /dev/null',
  '+++ b/new.txt',
  '@@ -0,0 +1 @@',
  '+x',
  '',
].join('\n');

/** The real git, with `extra` appended to what a listing starting with `args` prints. */
function reading(git: PatchGit, args: string[], extra: string): PatchGit {
  return {
    run: (a, e) => git.run(a, e),
    list: async (a) => {
      const result = await git.list(a);
      return args.every((arg) => a.includes(arg)) ? { ...result, stdout: result.stdout + extra } : result;
    },
  };
}

describe('applyDiff: git reads more than the checker', () => {
  let repo: TempRepo;
  let root: string;
  beforeEach(async () => {
    repo = await createTempRepo({ files: { 'README.md': '# r\n' } });
    root = await realpath(repo.path);
  });
  afterEach(async () => {
    await repo.dispose();
  });

  const apply = async (git: PatchGit) =>
    applyDiff(root, create, { git, patterns: defaultProtected, protectedAction: 'error', dryRun: false });

  it('the real git: applied', async () => {
    expect(await apply(await openGit(root, env, 30_000))).toMatchObject({ status: 'succeeded' });
    expect(existsSync(join(root, 'new.txt'))).toBe(true);
  });

  it('a name git would write that the checker did not read: refused, nothing written', async () => {
    const git = reading(await openGit(root, env, 30_000), ['--numstat', '-R'], '0\t0\t.env\0');
    expect(await apply(git)).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/git reads file names the checker does not: "\.env"/),
    });
    expect(existsSync(join(root, 'new.txt'))).toBe(false);
  });

  it('a symlink git would create that the checker did not see: refused', async () => {
    const git = reading(await openGit(root, env, 30_000), ['--summary'], ' create mode 120000 new.txt\n');
    expect(await apply(git)).toMatchObject({ status: 'failed', error: expect.stringMatching(/mode 120000/) });
    expect(existsSync(join(root, 'new.txt'))).toBe(false);
  });
});
