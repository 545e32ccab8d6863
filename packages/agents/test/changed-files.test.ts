import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, git, gitTestEnv, writeFiles, type TempDir } from '@codefleet/testkit';
import { changedFiles, headCommit, parsePorcelainZ } from '../src/index.js';

const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin' };

describe('parsePorcelainZ', () => {
  it('reads plain entries and both names of renames and copies', () => {
    expect(
      parsePorcelainZ(' M a.ts\0?? dir/new file.ts\0R  new.ts\0old.ts\0D  gone.ts\0C  copy.ts\0orig.ts\0'),
    ).toEqual(['a.ts', 'dir/new file.ts', 'new.ts', 'old.ts', 'gone.ts', 'copy.ts', 'orig.ts']);
    expect(parsePorcelainZ('')).toEqual([]);
  });
});

describe('changedFiles', () => {
  const dirs: TempDir[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await dir.dispose();
  });
  const repo = async () => {
    const created = await createTempRepo({
      prefix: 'agents-changes',
      files: {
        'README.md': '# r\n',
        'src/a.ts': 'a\n',
        'src/b.ts': 'b\n',
        'old.ts': 'old\n',
        '.codefleet.yml': 'dod: []\n',
      },
    });
    dirs.push(created);
    return created;
  };

  it('leaves out an untracked context file the workspace wrote, but counts a tracked one that was edited', async () => {
    const { path } = await repo();
    await writeFiles(path, { 'CLAUDE.md': 'context\n', 'README.md': 'edited\n' });
    expect(await changedFiles(path, env, { untrackedContext: ['CLAUDE.md', 'README.md'] })).toEqual(['README.md']);
    expect(await changedFiles(path, env)).toEqual(['CLAUDE.md', 'README.md']);
  });

  it('is empty for a clean working copy', async () => {
    const { path } = await repo();
    expect(await changedFiles(path, env)).toEqual([]);
  });

  it('lists modified, deleted, renamed and untracked files, sorted, each untracked file on its own', async () => {
    const { path } = await repo();
    await writeFiles(path, {
      'src/a.ts': 'changed\n',
      'z/deep/new.ts': 'n\n',
      'z/deep/other.ts': 'o\n',
      'with space.md': 's\n',
      'ünï.md': 'u\n',
    });
    await rm(join(path, 'src/b.ts'));
    await git(path, ['mv', 'old.ts', 'renamed.ts']);
    expect(await changedFiles(path, env)).toEqual([
      'old.ts',
      'renamed.ts',
      'src/a.ts',
      'src/b.ts',
      'with space.md',
      'z/deep/new.ts',
      'z/deep/other.ts',
      'ünï.md',
    ]);
  });

  it('handles a file name with a newline', async () => {
    const { path } = await repo();
    await writeFile(join(path, 'odd\nname.txt'), 'x');
    expect(await changedFiles(path, env)).toEqual(['odd\nname.txt']);
  });

  it('leaves .codefleet/ out but keeps .codefleet.yml', async () => {
    const { path } = await repo();
    await writeFiles(path, {
      '.codefleet/prompt-implement-1.md': 'p',
      '.codefleet/task.md': 't',
      '.codefleet.yml': 'dod: [npm test]\n',
    });
    expect(await changedFiles(path, env)).toEqual(['.codefleet.yml']);
  });

  it('counts a memory bank file (.codefleet/memory/*.md) as a change, nothing else under .codefleet/', async () => {
    const { path } = await repo();
    await writeFiles(path, {
      '.codefleet/memory/pitfalls.md': 'p',
      '.codefleet/memory/a/b.md': 'x',
      '.codefleet/feedback-test-1.md': 'f',
    });
    expect(await changedFiles(path, env)).toEqual(['.codefleet/memory/pitfalls.md']);
  });

  it('counts files of commits made since `since`, plus what is uncommitted on top', async () => {
    const created = await repo();
    const before = await headCommit(created.path, env);
    await created.commit({ 'committed.ts': 'c\n', 'src/a.ts': 'agent edit\n' }, 'agent commit');
    await writeFiles(created.path, { 'src/b.ts': 'uncommitted\n', 'untracked.ts': 'u\n' });
    expect(await changedFiles(created.path, env)).toEqual(['src/b.ts', 'untracked.ts']);
    expect(await changedFiles(created.path, env, { since: before })).toEqual([
      'committed.ts',
      'src/a.ts',
      'src/b.ts',
      'untracked.ts',
    ]);
  });

  it('with no commit before the run, every committed file is new', async () => {
    const dir = await createTempDir('agents-unborn');
    dirs.push(dir);
    await git(dir.path, ['init', '--quiet', '--initial-branch=main']);
    expect(await headCommit(dir.path, env)).toBeNull();
    await writeFiles(dir.path, { 'a.ts': 'a\n', 'b/c.ts': 'c\n' });
    await git(dir.path, ['add', '--all']);
    await git(dir.path, ['commit', '--quiet', '-m', 'first']);
    await writeFiles(dir.path, { 'd.ts': 'd\n' });
    expect(await changedFiles(dir.path, env, { since: null })).toEqual(['a.ts', 'b/c.ts', 'd.ts']);
  });

  it('fails with git_failed outside a work tree', async () => {
    const dir = await createTempDir('agents-plain');
    dirs.push(dir);
    await expect(changedFiles(dir.path, env)).rejects.toMatchObject({ name: 'CodefleetError', code: 'git_failed' });
    await expect(headCommit(dir.path, env)).rejects.toMatchObject({ code: 'git_failed' });
  });

  it('does not follow a symlinked directory into the rest of the disk', async () => {
    const { path } = await repo();
    await mkdir(join(path, 'links'));
    await symlink('/etc', join(path, 'links/etc'));
    expect(await changedFiles(path, env)).toEqual(['links/etc']);
  });
});
