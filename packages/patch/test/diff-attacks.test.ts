/**
 * Diffs that try to write outside the workspace or onto protected files through the headers
 * `git apply` understands: C-quoted names, rename and copy lines, binary patches, `-p`
 * guessed from an earlier header, symlinks created by the patch, and untracked or ignored
 * symlinked directories that git's own check (which looks at the index) does not see.
 * Each is applied for real in a temporary repository; nothing outside may change.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, git, gitTestEnv, type TempDir, type TempRepo } from '@codefleet/testkit';
import { applyPatch, parsePatch, type PatchCommand } from '../src/index.js';

const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' };

async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const rel = relative(dir, path);
    if (rel === '.git' || rel.startsWith('.git/')) continue;
    out[rel] = entry.isFile()
      ? await readFile(path, 'utf8')
      : entry.isSymbolicLink()
        ? `-> ${await readlink(path)}`
        : 'dir';
  }
  return out;
}

/** The diff as one command, the way a model's reply or a chat coder's patch arrives. */
const asDiff = (text: string): PatchCommand[] => parsePatch(text).commands;

describe('diff paths are checked through the files on disk, every header form', () => {
  let repo: TempRepo;
  let outside: TempDir;
  beforeEach(async () => {
    outside = await createTempDir('diff-outside');
    await mkdir(join(outside.path, 'dep'));
    repo = await createTempRepo({
      files: { 'README.md': '# r\n', 'src/a.js': 'a\n', 'deploy/server.key': 'k\n', '.gitignore': 'node_modules/\n' },
    });
    // An untracked link to a directory outside, and an ignored one as `npm install` makes
    // for a `file:` dependency: neither is in the index.
    await symlink(outside.path, join(repo.path, 'cache'));
    await mkdir(join(repo.path, 'node_modules'));
    await symlink(join(outside.path, 'dep'), join(repo.path, 'node_modules', 'dep'));
  });
  afterEach(async () => {
    await repo.dispose();
    await outside.dispose();
  });

  /** Applies `commands` and expects one refusal matching `reason`, nothing changed anywhere. */
  async function expectRefused(commands: PatchCommand[], reason: RegExp) {
    const before = {
      ws: await snapshot(repo.path),
      outside: await snapshot(outside.path),
      index: await git(repo.path, ['ls-files', '--stage']),
    };
    const result = await applyPatch(commands, { root: repo.path, env });
    expect(result.results.map((r) => r.status)).toEqual(['failed']);
    expect(result.results[0]?.error).toMatch(reason);
    expect(await snapshot(outside.path)).toEqual(before.outside);
    expect(await snapshot(repo.path)).toEqual(before.ws);
    expect(await git(repo.path, ['ls-files', '--stage'])).toBe(before.index);
  }

  it('a C-quoted name through an untracked symlinked directory', async () => {
    const diff = [
      'diff --git "a/cache/p" "b/cache/p"',
      'new file mode 100644',
      '--- /dev/null',
      '+++ "b/cache/p"',
      '@@ -0,0 +1 @@',
      '+x',
      '',
    ].join('\n');
    await expectRefused(asDiff(diff), /symlink on the way leads outside/);
    expect(existsSync(join(outside.path, 'p'))).toBe(false);
  });

  it('a rename target through an ignored symlinked directory (a file: dependency in node_modules)', async () => {
    const diff = [
      'diff --git a/src/a.js b/node_modules/dep/a.js',
      'similarity index 100%',
      'rename from src/a.js',
      'rename to node_modules/dep/a.js',
      '',
    ].join('\n');
    await expectRefused(asDiff(diff), /symlink on the way leads outside/);
  });

  it('a name whose -p was guessed from an earlier header (b/ is then a directory, not a prefix)', async () => {
    await symlink(outside.path, join(repo.path, 'b'));
    const diff = [
      '--- README.md',
      '+++ README.md',
      '@@ -1 +1 @@',
      '-# r',
      '+# s',
      '--- b/evil',
      '+++ b/evil',
      '@@ -0,0 +1 @@',
      '+x',
      '',
    ].join('\n');
    await expectRefused(asDiff(diff), /symlink on the way leads outside/);
  });

  it('a rename to .env after a harmless file, and a copy to .env', async () => {
    const harmless = [
      'diff --git a/README.md b/README.md',
      '--- a/README.md',
      '+++ b/README.md',
      '@@ -1 +1 @@',
      '-# r',
      '+# s',
    ];
    const rename = [
      ...harmless,
      'diff --git a/src/a.js b/.env',
      'similarity index 100%',
      'rename from src/a.js',
      'rename to .env',
      '',
    ].join('\n');
    await expectRefused(asDiff(rename), /protected file .*\.env/);
    const copy = [
      'diff --git a/src/a.js b/config/.env.local',
      'similarity index 100%',
      'copy from src/a.js',
      'copy to config/.env.local',
      '',
    ].join('\n');
    await expectRefused(asDiff(copy), /protected file .*\.env\.local/);
  });

  it('an octal-escaped "b/\\056env" (.env) and other C escapes', async () => {
    const dotEnv = [
      'diff --git "a/\\056env" "b/\\056env"',
      'new file mode 100644',
      '--- /dev/null',
      '+++ "b/\\056env"',
      '@@ -0,0 +1 @@',
      '+TOKEN=x',
      '',
    ].join('\n');
    await expectRefused(asDiff(dotEnv), /protected file \.env/);
    const tabbed = [
      'diff --git "a/ca\\143he/\\164" "b/ca\\143he/\\164"',
      'new file mode 100644',
      '--- /dev/null',
      '+++ "b/ca\\143he/\\164"',
      '@@ -0,0 +1 @@',
      '+x',
      '',
    ].join('\n');
    await expectRefused(asDiff(tabbed), /symlink on the way leads outside/);
  });

  it('a GIT binary patch to a protected file, after a text change', async () => {
    // Made by git itself, in a copy of the repository.
    const scratch = await createTempRepo({
      files: { 'README.md': '# r\n', 'src/a.js': 'a\n', 'deploy/server.key': 'k\n', '.gitignore': 'node_modules/\n' },
    });
    try {
      await writeFile(join(scratch.path, 'src/a.js'), 'b\n');
      await writeFile(join(scratch.path, 'deploy/server.key'), Buffer.from([0, 1, 2, 3, 255, 0, 10]));
      const diff = `${await git(scratch.path, ['diff', '--binary'])}\n`;
      expect(diff).toMatch(/GIT binary patch/);
      await expectRefused(asDiff(diff), /protected file deploy\/server\.key/);
    } finally {
      await scratch.dispose();
    }
  });

  it('a patch that creates a symlink to outside, or retargets one, or types a file as a link', async () => {
    const create = [
      'diff --git a/link b/link',
      'new file mode 120000',
      'index 0000000..1111111',
      '--- /dev/null',
      '+++ b/link',
      '@@ -0,0 +1 @@',
      `+${outside.path}`,
      '\\ No newline at end of file',
      '',
    ].join('\n');
    await expectRefused(asDiff(create), /mode 120000.*not symlinks/);
    expect(existsSync(join(repo.path, 'link'))).toBe(false);
    // A link to a file inside; a plain diff (no modes at all) would make git retarget it.
    await symlink('README.md', join(repo.path, 'inner'));
    const retarget = [
      '--- a/inner',
      '+++ b/inner',
      '@@ -1 +1 @@',
      '-README.md',
      '\\ No newline at end of file',
      `+${outside.path}/x`,
      '\\ No newline at end of file',
      '',
    ].join('\n');
    await expectRefused(asDiff(retarget), /is a symlink/);
    const modeChange = ['diff --git a/src/a.js b/src/a.js', 'old mode 100644', 'new mode 120000', ''].join('\n');
    await expectRefused(asDiff(modeChange), /mode 120000/);
  });

  it('the diff text decides, not the paths that came with the command; a diff without headers is refused', async () => {
    const toEnv = [
      'diff --git a/.env b/.env',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/.env',
      '@@ -0,0 +1 @@',
      '+T=1',
      '',
    ].join('\n');
    await expectRefused(
      [{ type: 'diff', action: 'apply', target: 'ok.txt', content: toEnv, paths: ['ok.txt'] }],
      /protected file \.env/,
    );
    await expectRefused(
      [{ type: 'diff', action: 'apply', target: 'ok.txt', content: 'just words\n', paths: ['ok.txt'] }],
      /no file header/,
    );
  });

  it('a harmless diff still applies', async () => {
    const result = await applyPatch(
      asDiff(
        ['diff --git a/src/a.js b/src/a.js', '--- a/src/a.js', '+++ b/src/a.js', '@@ -1 +1 @@', '-a', '+b', ''].join(
          '\n',
        ),
      ),
      { root: repo.path, env },
    );
    expect(result.summary).toBe('executed 1, succeeded 1, failed 0');
    expect(await readFile(join(repo.path, 'src/a.js'), 'utf8')).toBe('b\n');
  });
});
