/**
 * A rollback (auto-commit, stop on error) puts back what the before-commit cannot hold:
 * files git ignores. The ones the patch added go, the ones it changed come back, the ones
 * that were there (dependencies, build output) stay.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, git, gitTestEnv, type TempRepo } from '@codefleet/testkit';
import { applyPatch, parsePatch } from '../src/index.js';

const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' };

describe('rollback', () => {
  let repo: TempRepo;
  beforeEach(async () => {
    repo = await createTempRepo({
      files: { '.gitignore': 'dist/\nbuild/\nlocal.cfg\nnode_modules/\n', 'src/a.txt': 'a\n' },
    });
    await writeFile(join(repo.path, 'local.cfg'), 'port=1\n');
    await mkdir(join(repo.path, 'node_modules', 'dep'), { recursive: true });
    await writeFile(join(repo.path, 'node_modules', 'dep', 'index.js'), 'dep\n');
  });
  afterEach(async () => {
    await repo.dispose();
  });

  it('removes ignored files the patch added, restores ignored files it changed, keeps the ones that were there', async () => {
    const { commands } = parsePatch(
      JSON.stringify([
        { type: 'file_edit', action: 'create', target: 'dist/out.js', content: 'built\n' },
        { type: 'file_edit', action: 'update', target: 'local.cfg', content: 'port=2\n' },
        { type: 'shell_command', action: 'run', content: 'mkdir -p build && echo x > build/y' },
        { type: 'shell_command', action: 'run', content: 'exit 1' },
      ]),
    );
    const result = await applyPatch(commands, { root: repo.path, env, autoCommit: true, onError: 'stop' });
    expect(result.summary).toBe('executed 4, succeeded 3, failed 1 (rolled back)');
    expect(existsSync(join(repo.path, 'dist'))).toBe(false);
    expect(existsSync(join(repo.path, 'build'))).toBe(false);
    expect(await readFile(join(repo.path, 'local.cfg'), 'utf8')).toBe('port=1\n');
    expect(await readFile(join(repo.path, 'node_modules', 'dep', 'index.js'), 'utf8')).toBe('dep\n');
    expect(await git(repo.path, ['status', '--porcelain', '--ignored'])).toBe('!! local.cfg\n!! node_modules/');
  });

  it('never removes or writes through a directory a command turned into a symlink to outside', async () => {
    const outside = await createTempDir('rollback-outside');
    try {
      await writeFile(join(outside.path, 'out.js'), 'keep\n');
      const result = await applyPatch(
        [
          { type: 'file_edit', action: 'create', target: 'dist/out.js', content: 'built\n' },
          { type: 'shell_command', action: 'run', content: `rm -rf dist && ln -s '${outside.path}' dist && exit 1` },
        ],
        { root: repo.path, env, autoCommit: true, onError: 'stop' },
      );
      expect(result.summary).toBe('executed 2, succeeded 1, failed 1 (rolled back)');
      expect(await readFile(join(outside.path, 'out.js'), 'utf8')).toBe('keep\n');
      expect(existsSync(join(repo.path, 'dist'))).toBe(false);
    } finally {
      await outside.dispose();
    }
  });

  it('a diff that wrote an ignored file is undone too', async () => {
    const diff = [
      'diff --git a/dist/gen.js b/dist/gen.js',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/dist/gen.js',
      '@@ -0,0 +1 @@',
      '+gen',
      '',
    ].join('\n');
    const commands = [
      ...parsePatch(diff).commands,
      { type: 'shell_command' as const, action: 'run' as const, content: 'exit 1' },
    ];
    const result = await applyPatch(commands, { root: repo.path, env, autoCommit: true, onError: 'stop' });
    expect(result.results.map((r) => r.status)).toEqual(['succeeded', 'failed']);
    expect(existsSync(join(repo.path, 'dist'))).toBe(false);
  });
});
