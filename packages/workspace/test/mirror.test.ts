import { readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, git } from '@codefleet/testkit';
import { createGit } from '../src/git.js';
import { mirrorPaths, syncMirror } from '../src/mirror.js';
import { sampleFiles, testGitEnv } from './helpers.js';

const disposers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const dispose of disposers.splice(0).reverse()) await dispose();
});

describe('a new mirror', () => {
  it("holds byte for byte the config git's own config commands write, for a URL git must quote", async () => {
    const dir = await createTempDir('mirror');
    disposers.push(() => dir.dispose());
    const origin = await createTempRepo({ files: sampleFiles });
    disposers.push(() => origin.dispose());
    const url = join(dir.path, 'an "origin"\\ with spaces');
    await symlink(origin.path, url);
    const gitRunner = createGit(testGitEnv());
    const paths = mirrorPaths(join(dir.path, 'cache'), url);
    await syncMirror({ local: gitRunner, remote: gitRunner }, paths, {
      url,
      branch: 'ai/x-00000001',
      lockTimeoutMs: 30_000,
    });

    // The settings as `git config` writes them, one key at a time.
    const expected = join(dir.path, 'expected.git');
    await git(dir.path, ['init', '--quiet', '--bare', expected]);
    for (const args of [
      ['remote', 'add', 'origin', url],
      ['config', 'remote.origin.fetch', '+refs/heads/*:refs/remotes/origin/*'],
      ['config', 'remote.origin.tagOpt', '--no-tags'],
      ['config', 'gc.auto', '0'],
      ['config', 'maintenance.auto', 'false'],
      ['config', 'core.repositoryformatversion', '1'],
      ['config', 'extensions.worktreeConfig', 'true'],
      ['config', '--unset', 'core.bare'],
      ['config', '--worktree', 'core.bare', 'true'],
    ])
      await git(expected, args);
    for (const file of ['config', 'config.worktree'])
      expect({ file, text: await readFile(join(paths.dir, file), 'utf8') }).toEqual({
        file,
        text: await readFile(join(expected, file), 'utf8'),
      });
    expect(await git(paths.dir, ['config', 'remote.origin.url'])).toBe(url);
    expect(await git(paths.dir, ['rev-parse', '--verify', 'refs/remotes/origin/main'])).toMatch(/^[0-9a-f]{40}$/);
  });
});
