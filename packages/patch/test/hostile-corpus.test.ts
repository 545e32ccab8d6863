/**
 * Hostile patches as a chat coder or a model could send them, in all three formats, each
 * applied for real with stop-on-error and auto-commit after a legitimate edit: every one
 * is refused with a reason, the legitimate edit is rolled back, and neither the workspace
 * nor anything outside it changes.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, rm, symlink } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, git, gitTestEnv, type TempDir, type TempRepo } from '@codefleet/testkit';
import { applyPatch, parsePatch } from '../src/index.js';

// Names that would be harmless even if a bug let a write through (tests may run as root).
const etcDecoy = `/etc/codefleet-hostile-${randomUUID()}`;
const legit = { type: 'file_edit', action: 'create', target: 'legit.txt', content: 'fine\n' };
const json = (hostile: object) => JSON.stringify([legit, hostile]);

const corpus: [string, (outside: string) => string, RegExp][] = [
  [
    'traversal in target',
    () => json({ type: 'file_edit', action: 'create', target: '../../escape.txt', content: 'x' }),
    /leaves the workspace/,
  ],
  [
    'traversal in a rename destination',
    () => json({ type: 'file_edit', action: 'rename', target: 'README.md', metadata: { destination: '../moved.md' } }),
    /leaves the workspace/,
  ],
  [
    'absolute copy destination',
    (outside) =>
      json({
        type: 'file_edit',
        action: 'copy',
        target: 'README.md',
        metadata: { destination: join(outside, 'copied.md') },
      }),
    /absolute|leaves the workspace/,
  ],
  [
    'absolute target',
    () => json({ type: 'file_edit', action: 'create', target: etcDecoy, content: 'x' }),
    /absolute|leaves the workspace/,
  ],
  [
    'traversal in a shell workdir',
    () => json({ type: 'shell_command', action: 'run', content: 'touch pwned', workdir: '../..' }),
    /leaves the workspace/,
  ],
  [
    'write through a committed symlink to /etc',
    () =>
      json({ type: 'file_edit', action: 'create', target: `etc-link/${etcDecoy.slice('/etc/'.length)}`, content: 'x' }),
    /leaves the workspace|symlink/,
  ],
  [
    'append through a symlink to /etc',
    () => json({ type: 'file_edit', action: 'append', target: 'etc-link/hostname', content: 'x' }),
    /leaves the workspace|symlink/,
  ],
  [
    'a git hook',
    () =>
      json({
        type: 'file_edit',
        action: 'create',
        target: '.git/hooks/pre-commit',
        content: '#!/bin/sh\ntouch /tmp/pwned\n',
      }),
    /\.git/,
  ],
  [
    'a git hook through mixed case and dots',
    () => json({ type: 'file_edit', action: 'create', target: './src/../.GIT/hooks/post-checkout', content: 'x' }),
    /\.git/i,
  ],
  [
    'git add of .git/config',
    () => json({ type: 'git_operation', action: 'add', target: '.git/config' }),
    /\.git|leaves the workspace/,
  ],
  [
    'a protected .env file',
    () => json({ type: 'file_edit', action: 'create', target: '.env', content: 'TOKEN=x' }),
    /protected/,
  ],
  [
    'a protected key file',
    () => json({ type: 'file_edit', action: 'update', target: 'deploy/server.key', content: 'x' }),
    /protected/,
  ],
  [
    'protected credentials',
    () => json({ type: 'file_edit', action: 'create', target: 'config/credentials.json', content: '{}' }),
    /protected/,
  ],
  [
    'a command that never ends',
    () => json({ type: 'shell_command', action: 'run', content: 'sleep 300 & sleep 300' }),
    /timed out/,
  ],
  [
    'Markdown block writing outside',
    () => ['```js:src/legit.js', 'ok', '```', '```js:../../outside.js', 'x', '```'].join('\n'),
    /leaves the workspace/,
  ],
  [
    'Markdown block writing a git hook',
    () => ['```js:src/legit.js', 'ok', '```', '```sh:.git/hooks/pre-push', 'touch /tmp/pwned', '```'].join('\n'),
    /\.git/,
  ],
  [
    'a diff touching a path outside',
    () => ['--- a/../outside.txt', '+++ b/../outside.txt', '@@ -0,0 +1 @@', '+x', ''].join('\n'),
    /leaves the workspace|outside|refused/,
  ],
  // The ways a file is named outside lang:path, and the formats read without git, go through the same checks.
  [
    'a heading naming a file outside',
    () => ['```js:src/legit.js', 'ok', '```', '### ../../outside.js', '```js', 'x', '```'].join('\n'),
    /leaves the workspace/,
  ],
  [
    'title= naming a protected file',
    () => ['```js:src/legit.js', 'ok', '```', '```sh title=".env.local"', 'TOKEN=x', '```'].join('\n'),
    /protected/,
  ],
  [
    'a first-line comment naming a git hook',
    () => ['```js:src/legit.js', 'ok', '```', '```sh', '# .git/hooks/pre-commit', 'touch /tmp/pwned', '```'].join('\n'),
    /\.git/,
  ],
  [
    'an Aider udiff creating a git hook',
    () =>
      [
        '```js:src/legit.js',
        'ok',
        '```',
        '```diff',
        '--- /dev/null',
        '+++ .git/hooks/pre-commit',
        '@@ @@',
        '+touch /tmp/pwned',
        '```',
      ].join('\n'),
    /\.git/,
  ],
  [
    'Delete File of the workspace itself',
    () => ['```js:src/legit.js', 'ok', '```', '*** Begin Patch', '*** Delete File: src/..', '*** End Patch'].join('\n'),
    /workspace itself/,
  ],
  [
    'a diff creating a git hook',
    () =>
      [
        'diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit',
        'new file mode 100755',
        '--- /dev/null',
        '+++ b/.git/hooks/pre-commit',
        '@@ -0,0 +1 @@',
        '+touch /tmp/pwned',
        '',
      ].join('\n'),
    /\.git/,
  ],
];

async function snapshot(dir: string, skipGit = true): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const rel = relative(dir, path);
    if (skipGit && (rel === '.git' || rel.startsWith('.git/'))) continue;
    out[rel] = entry.isFile() ? await readFile(path, 'utf8') : entry.isSymbolicLink() ? 'symlink' : 'dir';
  }
  return out;
}

describe('held-out style hostile patches, stop-on-error with auto-commit', () => {
  let repo: TempRepo;
  let outside: TempDir;
  const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' };
  beforeAll(async () => {
    outside = await createTempDir('hostile-outside');
    repo = await createTempRepo({ files: { 'README.md': '# r\n', 'src/a.js': 'a\n', 'deploy/server.key': 'k\n' } });
    // A symlink to /etc committed in the repository: repository content is not trusted either.
    await symlink('/etc', join(repo.path, 'etc-link'));
    await git(repo.path, ['add', 'etc-link']);
    await git(repo.path, ['commit', '-q', '-m', 'plant a symlink']);
  });
  afterAll(async () => {
    await rm(etcDecoy, { force: true });
    await repo.dispose();
    await outside.dispose();
  });

  it.each(corpus)('%s: refused with a reason, the workspace unchanged', async (_name, patch, reason) => {
    const beforeFiles = await snapshot(repo.path);
    const beforeOutside = await snapshot(outside.path);
    const beforeTree = await git(repo.path, ['rev-parse', 'HEAD^{tree}']);
    const { commands } = parsePatch(patch(outside.path));
    const result = await applyPatch(commands, {
      root: repo.path,
      env,
      autoCommit: true,
      onError: 'stop',
      shellTimeoutMs: 500,
    });
    const failed = result.results.filter((r) => r.status === 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.error).toMatch(reason);
    expect(await snapshot(repo.path)).toEqual(beforeFiles);
    expect(await git(repo.path, ['status', '--porcelain'])).toBe('');
    expect(await git(repo.path, ['rev-parse', 'HEAD^{tree}'])).toBe(beforeTree);
    expect(await snapshot(outside.path)).toEqual(beforeOutside);
    expect(existsSync(etcDecoy)).toBe(false);
    expect(existsSync(join(repo.path, '.git/hooks/pre-commit'))).toBe(false);
  });
});
