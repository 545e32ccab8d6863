/**
 * The engine's git calls run in the worker, outside any sandbox, on a repository whose
 * .git/config someone else may have written. Commands planted there (fsmonitor, hooks,
 * filter and merge drivers) must not run, and core.worktree must not move the work tree.
 * Each planted command would create a marker file; none may exist afterwards.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, git, gitTestEnv, type TempDir, type TempRepo } from '@codefleet/testkit';
import { applyPatch, parsePatch } from '../src/index.js';

const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' };
const lines = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`);

describe('hardened git calls', () => {
  let repo: TempRepo;
  let outside: TempDir;
  let marker: string;
  beforeEach(async () => {
    outside = await createTempDir('git-hardening');
    marker = join(outside.path, 'ran');
    repo = await createTempRepo({ files: { 'README.md': '# r\n', 'f.txt': `${lines.join('\n')}\n` } });
  });
  afterEach(async () => {
    await repo.dispose();
    await outside.dispose();
  });

  /** An executable that appends its name to the marker file (and does nothing else). */
  async function plant(name: string): Promise<string> {
    const path = join(outside.path, name);
    await writeFile(path, `#!/bin/sh\necho ${name} >> '${marker}'\ncat\n`);
    await chmod(path, 0o755);
    return path;
  }

  const diff = [
    'diff --git a/README.md b/README.md',
    '--- a/README.md',
    '+++ b/README.md',
    '@@ -1 +1 @@',
    '-# r',
    '+# s',
    '',
  ].join('\n');

  it('core.fsmonitor and a post-commit hook from the repository do not run (auto-commit, a diff, git operations)', async () => {
    await git(repo.path, ['config', 'core.fsmonitor', await plant('fsmonitor')]);
    await mkdir(join(repo.path, '.git', 'hooks'), { recursive: true });
    for (const hook of ['post-commit', 'pre-commit', 'post-index-change']) {
      await writeFile(join(repo.path, '.git', 'hooks', hook), `#!/bin/sh\necho ${hook} >> '${marker}'\n`, {
        mode: 0o755,
      });
    }
    const result = await applyPatch(
      [
        ...parsePatch(diff).commands,
        { type: 'file_edit', action: 'create', target: 'new.txt', content: 'n\n' },
        { type: 'git_operation', action: 'add', target: 'new.txt' },
        { type: 'git_operation', action: 'commit', content: 'by the patch' },
      ],
      { root: repo.path, env, autoCommit: true },
    );
    expect(result.summary).toBe('executed 4, succeeded 4, failed 0');
    expect(existsSync(marker) ? await readFile(marker, 'utf8') : 'nothing ran').toBe('nothing ran');
    expect(await git(repo.path, ['log', '-1', '--format=%s'])).toBe('[Worker Auto-Commit] after patch');
  });

  it('filter drivers from the repository config do not run; content passes through unfiltered', async () => {
    await writeFile(join(repo.path, '.gitattributes'), '* filter=evil\n');
    await git(repo.path, ['config', 'filter.evil.clean', await plant('clean')]);
    await git(repo.path, ['config', 'filter.evil.smudge', await plant('smudge')]);
    await git(repo.path, ['config', 'filter.evil.process', await plant('process')]);
    await git(repo.path, ['config', 'filter.evil.required', 'true']);
    const result = await applyPatch(
      [...parsePatch(diff).commands, { type: 'shell_command', action: 'run', content: 'exit 1' }],
      { root: repo.path, env, autoCommit: true, onError: 'stop' },
    );
    // Committed before, rolled back (reset --hard checks out again) after the failure.
    expect(result.summary).toBe('executed 2, succeeded 1, failed 1 (rolled back)');
    expect(existsSync(marker) ? await readFile(marker, 'utf8') : 'nothing ran').toBe('nothing ran');
    expect(await readFile(join(repo.path, 'README.md'), 'utf8')).toBe('# r\n');
  });

  it('a merge driver from the repository config does not run in a 3-way apply; the merge fails instead', async () => {
    // A diff made before line 1 changed: it no longer applies as is, only by merging.
    await writeFile(join(repo.path, 'f.txt'), `${lines.map((l, i) => (i === 3 ? 'four' : l)).join('\n')}\n`);
    const threeWay = `${await git(repo.path, ['diff', '--full-index'])}\n`;
    await git(repo.path, ['checkout', '--', 'f.txt']);
    await repo.commit({ 'f.txt': `${lines.map((l, i) => (i === 0 ? 'one' : l)).join('\n')}\n` }, 'line 1 changes');

    const merged = await applyPatch(parsePatch(threeWay).commands, { root: repo.path, env });
    expect(merged.summary).toBe('executed 1, succeeded 1, failed 0');
    expect(merged.results[0]?.notes).toEqual([expect.stringMatching(/^merged 3-way/)]);
    expect((await readFile(join(repo.path, 'f.txt'), 'utf8')).split('\n').slice(0, 4)).toEqual([
      'one',
      'line 2',
      'line 3',
      'four',
    ]);

    await git(repo.path, ['reset', '--hard', '--quiet']);
    await repo.commit({ '.gitattributes': 'f.txt merge=evil\n' }, 'a merge driver');
    await git(repo.path, ['config', 'merge.evil.driver', `${await plant('merge')} %O %A %B`]);
    const refused = await applyPatch(parsePatch(threeWay).commands, { root: repo.path, env });
    // Without its driver the merge fails; only the next attempt, reduced context, applies the diff.
    expect(refused.results[0]).toMatchObject({
      status: 'succeeded',
      notes: [expect.stringMatching(/reduced context/), expect.stringMatching(/^Context reduced/)],
    });
    expect(existsSync(marker) ? await readFile(marker, 'utf8') : 'nothing ran').toBe('nothing ran');
  });

  it('core.worktree pointing elsewhere moves nothing: auto-commit and rollback act on the workspace', async () => {
    await writeFile(join(outside.path, 'keep.txt'), 'keep\n');
    await git(repo.path, ['config', 'core.worktree', outside.path]);
    const before = await readdir(outside.path);
    const result = await applyPatch(
      [
        { type: 'file_edit', action: 'create', target: 'two.txt', content: '2\n' },
        { type: 'shell_command', action: 'run', content: 'exit 1' },
      ],
      { root: repo.path, env, autoCommit: true, onError: 'stop' },
    );
    expect(result.summary).toBe('executed 2, succeeded 1, failed 1 (rolled back)');
    expect(await readdir(outside.path)).toEqual(before);
    expect(existsSync(join(repo.path, 'two.txt'))).toBe(false);
    // The before-commit holds the workspace's files, not the other directory's.
    expect(await git(repo.path, ['-c', 'core.worktree=', 'ls-tree', '--name-only', 'HEAD'])).toBe('README.md\nf.txt');
  });

  it('GIT_DIR and GIT_INDEX_FILE in the given environment do not redirect the engine', async () => {
    const other = await createTempRepo({ files: { 'other.txt': 'o\n' } });
    try {
      const result = await applyPatch(parsePatch(diff).commands, {
        root: repo.path,
        env: { ...env, GIT_DIR: join(other.path, '.git'), GIT_INDEX_FILE: join(outside.path, 'index') },
        autoCommit: true,
      });
      expect(result.summary).toBe('executed 1, succeeded 1, failed 0');
      expect(await git(other.path, ['log', '--format=%s'])).toBe('initial commit');
      expect(await git(repo.path, ['log', '-1', '--format=%s'])).toBe('[Worker Auto-Commit] after patch');
      expect(existsSync(join(outside.path, 'index'))).toBe(false);
    } finally {
      await other.dispose();
    }
  });
});
