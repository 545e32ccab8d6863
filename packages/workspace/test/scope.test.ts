import { access, constants, mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { git } from '@codefleet/testkit';
import { createScopeMatcher, readOnlyPaths, sparsePatterns } from '../src/scope.js';
import type { Workspace } from '../src/index.js';
import { createFixture, exists, sampleFiles, type Fixture } from './helpers.js';

// Root bypasses file permissions, so as root a write to a read-only file succeeds and
// only the mode bits can show that the scope was applied.
const isRoot = process.getuid?.() === 0;

async function isWritable(path: string): Promise<boolean> {
  return ((await stat(path)).mode & 0o222) !== 0;
}

/** Asserts that writing `path` is refused (EACCES), or as root that no write bit is set. */
async function expectReadOnly(path: string): Promise<void> {
  expect(await isWritable(path)).toBe(false);
  if (!isRoot) await expect(writeFile(path, 'overwritten\n')).rejects.toMatchObject({ code: 'EACCES' });
}

describe('scope patterns', () => {
  it('match like gitignore: basename anywhere, anchored with a slash, directories cover their contents', () => {
    const matches = createScopeMatcher(['*.md', '/config/', 'docs/api/**', '!README.md']);
    expect(matches('docs/guide.md')).toBe(true);
    expect(matches('README.md')).toBe(false);
    expect(matches('config/.env')).toBe(true);
    expect(matches('src/config/x.js')).toBe(false);
    expect(matches('docs/api/reference.txt')).toBe(true);
    expect(matches('src/index.js')).toBe(false);
    expect(createScopeMatcher(['secrets'])('a/secrets/key')).toBe(true);
    expect(createScopeMatcher(['build/'])('build')).toBe(false);
  });

  it('make fully read-only directories read-only too, but not mixed ones', () => {
    const files = ['docs/a.md', 'docs/api/b.md', 'src/x.js', 'src/y.md'];
    expect(readOnlyPaths(files, ['*.md'])).toEqual({
      files: ['docs/a.md', 'docs/api/b.md', 'src/y.md'],
      dirs: ['docs', 'docs/api'],
    });
    expect(readOnlyPaths(files, [])).toEqual({ files: [], dirs: [] });
  });

  it('turn excludes into negated non-cone sparse patterns', () => {
    expect(sparsePatterns(undefined)).toBeUndefined();
    expect(sparsePatterns(['secrets/', '**/.env', '!keep', '-odd'])).toEqual([
      '/*',
      '!secrets/',
      '!**/.env',
      'keep',
      '!-odd',
    ]);
  });
});

describe('scope in a working copy', () => {
  let fixture: Fixture | undefined;
  const workspaces: Workspace[] = [];
  afterEach(async () => {
    for (const ws of workspaces.splice(0)) await ws.release();
    await fixture?.dispose();
    fixture = undefined;
  });

  it.each([true, false])('excluded files are absent on disk and read files are read-only (reuse %s)', async (reuse) => {
    fixture = await createFixture(sampleFiles, reuse);
    const ws = await fixture.manager.prepare({
      jobId: 'job-scope',
      repoUrl: fixture.origin.path,
      branch: 'ai/scope-00000001',
      scope: { exclude: ['secrets/', '**/.env'], read: ['docs/', 'README.md'] },
    });
    workspaces.push(ws);

    expect(await exists(join(ws.dir, 'secrets'))).toBe(false);
    expect(await exists(join(ws.dir, 'secrets/prod.key'))).toBe(false);
    expect(await exists(join(ws.dir, 'config/.env'))).toBe(false);
    await expectReadOnly(join(ws.dir, 'docs/guide.md'));
    await expectReadOnly(join(ws.dir, 'docs/api/reference.md'));
    await expectReadOnly(join(ws.dir, 'README.md'));
    // The whole docs tree is read-only, so a file cannot be replaced by rename either.
    expect(await isWritable(join(ws.dir, 'docs'))).toBe(false);
    // Everything else stays writable.
    await writeFile(join(ws.dir, 'src/index.js'), 'export const answer = 43;\n');
    await access(join(ws.dir, 'src/util.js'), constants.W_OK);
    // Absent is not deleted: nothing in scope shows up as a change.
    expect(await ws.changedFiles()).toEqual(['src/index.js']);
  });

  it('a commit leaves excluded files as they are in the base', async () => {
    fixture = await createFixture(sampleFiles, true);
    const ws = await fixture.manager.prepare({
      jobId: 'job-scope-commit',
      repoUrl: fixture.origin.path,
      branch: 'ai/scope-00000002',
      scope: { exclude: ['secrets/'] },
    });
    workspaces.push(ws);
    await writeFile(join(ws.dir, 'src/index.js'), 'changed\n');
    await ws.commit('change', { name: 'bot', email: 'bot@codefleet.invalid' });
    expect(await git(ws.dir, ['show', '--name-only', '--format=', 'HEAD'])).toBe('src/index.js');
    expect(await git(ws.dir, ['ls-tree', '-r', '--name-only', 'HEAD', 'secrets'])).toBe('secrets/prod.key');
  });

  it('keeps out-of-scope writes out of the commit, reports them, and re-hides excluded files on reuse', async () => {
    fixture = await createFixture(sampleFiles, true);
    const { manager, origin } = fixture;
    const scope = { exclude: ['secrets/'], read: ['docs/'] };
    const ws = await manager.prepare({ jobId: 'job-1', repoUrl: origin.path, branch: 'ai/one-00000001', scope });
    // What permissions cannot stop: writes as root, or into a path that is absent.
    await mkdir(join(ws.dir, 'secrets'), { recursive: true });
    await writeFile(join(ws.dir, 'secrets/prod.key'), 'made up by the agent\n');
    await writeFile(join(ws.dir, 'secrets/new.key'), 'new\n');
    if (isRoot) await writeFile(join(ws.dir, 'docs/guide.md'), 'rewritten\n');
    await writeFile(join(ws.dir, 'src/index.js'), 'in scope\n');
    const forbidden = ['secrets/new.key', 'secrets/prod.key', ...(isRoot ? ['docs/guide.md'] : [])].sort();
    expect(await ws.outOfScopeChanges()).toEqual(forbidden);
    await ws.commit('work', { name: 'bot', email: 'bot@codefleet.invalid' });
    expect(await git(ws.dir, ['show', '--name-only', '--format=', 'HEAD'])).toBe('src/index.js');
    await ws.release();

    const next = await manager.prepare({ jobId: 'job-2', repoUrl: origin.path, branch: 'ai/two-00000002', scope });
    workspaces.push(next);
    // The files are gone again (git may leave the emptied directory behind).
    expect(await exists(join(next.dir, 'secrets/prod.key'))).toBe(false);
    expect(await exists(join(next.dir, 'secrets/new.key'))).toBe(false);
    expect(await next.changedFiles()).toEqual([]);
  });

  it('a reused pool slot takes the next job scope, with permissions restored first (after a crash too)', async () => {
    fixture = await createFixture(sampleFiles, true);
    const { manager, origin } = fixture;
    const first = await manager.prepare({
      jobId: 'job-1',
      repoUrl: origin.path,
      branch: 'ai/one-00000001',
      scope: { exclude: ['docs/api/'], read: ['docs/', 'src/util.js'] },
    });
    expect(await exists(join(first.dir, 'docs/api/reference.md'))).toBe(false);
    // Job 1 crashed: no release, so its read-only files are still read-only when the
    // sweeper hands the slot on, and the reset has to restore them.
    expect((await manager.sweep((jobId) => jobId !== 'job-1')).released).toEqual([first.dir]);

    const second = await manager.prepare({
      jobId: 'job-2',
      repoUrl: origin.path,
      branch: 'ai/two-00000002',
      scope: { exclude: ['secrets/'], read: ['src/index.js'] },
    });
    workspaces.push(second);
    expect(second.dir).toBe(first.dir);
    expect(await exists(join(second.dir, 'docs/api/reference.md'))).toBe(true);
    expect(await exists(join(second.dir, 'secrets/prod.key'))).toBe(false);
    expect(await isWritable(join(second.dir, 'docs'))).toBe(true);
    expect(await isWritable(join(second.dir, 'docs/guide.md'))).toBe(true);
    expect(await isWritable(join(second.dir, 'src/util.js'))).toBe(true);
    await expectReadOnly(join(second.dir, 'src/index.js'));
    await mkdir(join(second.dir, 'docs/new'), { recursive: true });

    await second.release();
    const third = await manager.prepare({ jobId: 'job-3', repoUrl: origin.path, branch: 'ai/three-00000003' });
    workspaces.push(third);
    expect(await exists(join(third.dir, 'secrets/prod.key'))).toBe(true);
    expect(await exists(join(third.dir, 'docs/new'))).toBe(false);
    expect(await isWritable(join(third.dir, 'src/index.js'))).toBe(true);
  });
});
