import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { git } from '@codefleet/testkit';
import { createWorkspaceManager, type Workspace } from '../src/index.js';
import { createFixture, exists, sampleFiles, testGitEnv, type Fixture } from './helpers.js';

const author = { name: 'bot', email: 'bot@codefleet.invalid' };

describe('pool of working copies', () => {
  let fixture: Fixture | undefined;
  const workspaces: Workspace[] = [];
  afterEach(async () => {
    for (const ws of workspaces.splice(0)) await ws.release();
    await fixture?.dispose();
    fixture = undefined;
  });

  it('resets a reused slot (changes, commits, untracked and ignored files) but keeps node_modules', async () => {
    fixture = await createFixture(sampleFiles, true);
    const { manager, origin } = fixture;
    const first = await manager.prepare({
      jobId: 'job-1',
      repoUrl: origin.path,
      branch: 'ai/one-00000001',
      context: { 'AGENTS.md': 'x' },
    });
    await writeFile(join(first.dir, 'README.md'), '# modified\n');
    await rm(join(first.dir, 'src/util.js'));
    await writeFile(join(first.dir, 'src/index.js'), 'committed change\n');
    await first.commit('work of job 1', author);
    await writeFile(join(first.dir, 'untracked.txt'), 'junk\n');
    await mkdir(join(first.dir, 'dist'), { recursive: true });
    await writeFile(join(first.dir, 'dist/bundle.js'), 'ignored build output\n');
    await mkdir(join(first.dir, 'node_modules/left-pad'), { recursive: true });
    await writeFile(join(first.dir, 'node_modules/left-pad/index.js'), 'module.exports = 1;\n');
    await writeFile(first.installStamp, JSON.stringify({ hash: 'h', dirs: ['node_modules'], clean: true })); // as an install step records it
    await first.release();

    const second = await manager.prepare({ jobId: 'job-2', repoUrl: origin.path, branch: 'ai/two-00000002' });
    workspaces.push(second);
    expect(second.dir).toBe(first.dir);
    expect(await git(second.dir, ['branch', '--show-current'])).toBe('ai/two-00000002');
    expect(await git(second.dir, ['rev-parse', 'HEAD'])).toBe(await origin.git(['rev-parse', 'HEAD']));
    expect(await readFile(join(second.dir, 'README.md'), 'utf8')).toBe(sampleFiles['README.md']);
    expect(await readFile(join(second.dir, 'src/index.js'), 'utf8')).toBe(sampleFiles['src/index.js']);
    expect(await exists(join(second.dir, 'src/util.js'))).toBe(true);
    expect(await exists(join(second.dir, 'untracked.txt'))).toBe(false);
    expect(await exists(join(second.dir, 'dist'))).toBe(false);
    expect(await exists(join(second.dir, 'AGENTS.md'))).toBe(false);
    expect(await readFile(join(second.dir, 'node_modules/left-pad/index.js'), 'utf8')).toBe('module.exports = 1;\n');
    expect(await git(second.dir, ['status', '--porcelain'])).toBe('');
    expect(await second.changedFiles()).toEqual([]);
  });

  it('keeps node_modules (written by install steps only) and never reports or commits it; throws away .venv and the like', async () => {
    const { '.gitignore': _ignored, ...files } = sampleFiles;
    fixture = await createFixture(files, true);
    const { manager, origin } = fixture;
    const first = await manager.prepare({ jobId: 'job-1', repoUrl: origin.path, branch: 'ai/one-00000001' });
    await mkdir(join(first.dir, '.venv/lib'), { recursive: true });
    await writeFile(join(first.dir, '.venv/lib/site.py'), 'x = 1\n');
    await mkdir(join(first.dir, 'packages/a/node_modules/dep'), { recursive: true });
    await writeFile(join(first.dir, 'packages/a/node_modules/dep/index.js'), 'x\n');
    // Not a dependency directory codefleet keeps: an untracked file like any other.
    expect(await first.changedFiles()).toEqual(['.venv/lib/site.py']);
    // As an install step records it: node_modules is kept because an install wrote it; one
    // the install did not write (an agent's, under src/) is thrown away.
    await writeFile(first.installStamp, JSON.stringify({ hash: 'h', dirs: ['packages/a/node_modules'], clean: true }));
    await mkdir(join(first.dir, 'src/node_modules/lodash'), { recursive: true });
    await writeFile(join(first.dir, 'src/node_modules/lodash/index.js'), 'planted\n');
    await first.release();

    const second = await manager.prepare({ jobId: 'job-2', repoUrl: origin.path, branch: 'ai/two-00000002' });
    workspaces.push(second);
    expect(await exists(join(second.dir, '.venv/lib/site.py'))).toBe(false);
    expect(await exists(join(second.dir, 'packages/a/node_modules/dep/index.js'))).toBe(true);
    expect(await exists(join(second.dir, 'src/node_modules'))).toBe(false);
    await writeFile(join(second.dir, 'src/index.js'), 'changed\n');
    expect(await second.changedFiles()).toEqual(['src/index.js']);
    await second.commit('work', author);
    expect(await git(second.dir, ['show', '--name-only', '--format=', 'HEAD'])).toBe('src/index.js');
  });

  it('throws away node_modules an install made after an agent ran (not clean)', async () => {
    fixture = await createFixture(sampleFiles, true);
    const { manager, origin } = fixture;
    const first = await manager.prepare({ jobId: 'job-1', repoUrl: origin.path, branch: 'ai/one-00000001' });
    await mkdir(join(first.dir, 'node_modules/dep'), { recursive: true });
    await writeFile(first.installStamp, JSON.stringify({ hash: 'h', dirs: ['node_modules'], clean: false }));
    await first.release();
    const second = await manager.prepare({ jobId: 'job-2', repoUrl: origin.path, branch: 'ai/two-00000002' });
    workspaces.push(second);
    expect(await exists(join(second.dir, 'node_modules'))).toBe(false);
  });

  it('throws away a node_modules no install step recorded (an agent made it)', async () => {
    fixture = await createFixture(sampleFiles, true);
    const { manager, origin } = fixture;
    const first = await manager.prepare({ jobId: 'job-1', repoUrl: origin.path, branch: 'ai/one-00000001' });
    await mkdir(join(first.dir, 'node_modules/.bin'), { recursive: true });
    await writeFile(join(first.dir, 'node_modules/.bin/node'), '#!/bin/sh\necho shim\n');
    await first.release();
    const second = await manager.prepare({ jobId: 'job-2', repoUrl: origin.path, branch: 'ai/two-00000002' });
    workspaces.push(second);
    expect(second.dir).toBe(first.dir);
    expect(await exists(join(second.dir, 'node_modules'))).toBe(false);
  });

  it('keeps a slot taken while its job holds it, and hands out the next one', async () => {
    fixture = await createFixture(sampleFiles, true);
    const { manager, origin } = fixture;
    const a = await manager.prepare({ jobId: 'job-a', repoUrl: origin.path, branch: 'ai/a-00000001' });
    const b = await manager.prepare({ jobId: 'job-b', repoUrl: origin.path, branch: 'ai/b-00000002' });
    workspaces.push(b);
    expect(a.dir.endsWith('slot-0')).toBe(true);
    expect(b.dir.endsWith('slot-1')).toBe(true);
    await a.release();
    const c = await manager.prepare({ jobId: 'job-c', repoUrl: origin.path, branch: 'ai/c-00000003' });
    workspaces.push(c);
    expect(c.dir).toBe(a.dir);
  });

  it('recreates a slot that a reset cannot repair', async () => {
    fixture = await createFixture(sampleFiles, true);
    const { manager, origin } = fixture;
    const first = await manager.prepare({ jobId: 'job-1', repoUrl: origin.path, branch: 'ai/one-00000001' });
    // An agent pointed the copy at another repository, and locked a directory.
    await writeFile(join(first.dir, '.git'), `gitdir: ${origin.path}/.git\n`);
    await chmod(join(first.dir, 'docs'), 0o555);
    await first.release();
    const second = await manager.prepare({ jobId: 'job-2', repoUrl: origin.path, branch: 'ai/two-00000002' });
    workspaces.push(second);
    expect(second.dir).toBe(first.dir);
    expect(await git(second.dir, ['branch', '--show-current'])).toBe('ai/two-00000002');
    // The origin repository itself was not touched by the reset.
    expect(await origin.git(['branch', '--show-current'])).toBe('main');
    expect(await origin.git(['status', '--porcelain'])).toBe('');
  });

  it('prepares a branch that is still checked out in a free slot (a retry landing elsewhere)', async () => {
    fixture = await createFixture(sampleFiles, true);
    const { manager, origin, cache } = fixture;
    const busy = await manager.prepare({ jobId: 'job-x', repoUrl: origin.path, branch: 'ai/x-00000001' });
    const first = await manager.prepare({ jobId: 'job-1', repoUrl: origin.path, branch: 'ai/one-00000001' });
    await first.release();
    await busy.release();
    // slot-1 is free but still on ai/one; the retry gets slot-0.
    const retry = await manager.prepare({ jobId: 'job-1', repoUrl: origin.path, branch: 'ai/one-00000001' });
    workspaces.push(retry);
    expect(retry.dir).toBe(busy.dir);
    expect(await git(retry.dir, ['branch', '--show-current'])).toBe('ai/one-00000001');
    await retry.release();
    workspaces.splice(0);

    // The same with a fresh copy (reuse off) on the same cache.
    const fresh = createWorkspaceManager({ cacheDir: cache.path, reuse: false, gitEnv: testGitEnv() });
    const pristine = await fresh.prepare({ jobId: 'job-1', repoUrl: origin.path, branch: 'ai/one-00000001' });
    workspaces.push(pristine);
    expect(pristine.pooled).toBe(false);
    expect(await git(pristine.dir, ['branch', '--show-current'])).toBe('ai/one-00000001');
  });
});
