import { readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempRepo, git, gitTestEnv, withTimeoutsUntil, type TempRepo } from '@codefleet/testkit';
import { applyPatch, parsePatch } from '../src/index.js';

// Shell and git commands of a patch, run for real in a temporary git repository.
describe('applyPatch: shell and git commands', () => {
  let repo: TempRepo;
  const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' };
  beforeEach(async () => {
    repo = await createTempRepo({ files: { 'README.md': '# r\n', 'src/a.js': 'a\n' } });
  });
  afterEach(async () => {
    await repo.dispose();
  });

  it('runs Markdown shell blocks in order, in the workspace, with only the given environment', async () => {
    const { commands } = parsePatch(
      [
        '```js:src/b.js',
        'b',
        '```',
        '```sh',
        'cat src/b.js > copy.txt; echo "token=${GITHUB_TOKEN:-none}" >> copy.txt',
        '```',
      ].join('\n'),
    );
    const result = await applyPatch(commands, { root: repo.path, env });
    expect(result.summary).toBe('executed 2, succeeded 2, failed 0');
    expect(await readFile(join(repo.path, 'copy.txt'), 'utf8')).toBe('b\ntoken=none\n');
  });

  it('a command that never ends is killed with its children at the timeout; a failing one reports its exit', async () => {
    // One timeout for every command: `exit 3` must end on its own within it. A loaded machine
    // can hold its start past a short one; such a run is repeated with a longer timeout.
    const { result, timeoutMs } = await withTimeoutsUntil(
      [2_000, 20_000, 120_000],
      (shellTimeoutMs) =>
        applyPatch(
          [
            { type: 'shell_command', action: 'run', content: 'sleep 300 & sleep 300' },
            { type: 'shell_command', action: 'run', content: 'exit 3' },
            { type: 'shell_command', action: 'run', content: 'true', workdir: '../' },
          ],
          { root: repo.path, env, shellTimeoutMs },
        ),
      (run) => run.results[1]?.error === 'exit 3',
    );
    expect(result.results.map((r) => r.error)).toEqual([
      expect.stringMatching(new RegExp(`timed out after ${timeoutMs} ms`)),
      'exit 3',
      expect.stringMatching(/leaves the workspace/),
    ]);
  });

  it('git add, commit and checkout on paths inside the workspace; never into .git or onto branches', async () => {
    await writeFile(join(repo.path, 'src/a.js'), 'changed\n');
    await writeFile(join(repo.path, 'new.txt'), 'new\n');
    const result = await applyPatch(
      [
        { type: 'git_operation', action: 'add', target: 'new.txt' },
        { type: 'git_operation', action: 'commit', content: 'add new.txt' },
        { type: 'git_operation', action: 'checkout', target: 'src/a.js' },
        { type: 'git_operation', action: 'checkout' },
        { type: 'git_operation', action: 'add', target: '.git/config' },
      ],
      { root: repo.path, env },
    );
    expect(result.results.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'failed', 'failed']);
    expect(await git(repo.path, ['log', '-1', '--format=%s'])).toBe('add new.txt');
    expect(await readFile(join(repo.path, 'src/a.js'), 'utf8')).toBe('a\n');
  });

  it('a protected file is protected behind a symlink too, and from git operations (paths taken literally)', async () => {
    await writeFile(join(repo.path, '.env'), 'TOKEN=secret\n');
    await writeFile(join(repo.path, 'server.key'), 'k\n');
    await symlink('.env', join(repo.path, 'notes.txt'));
    const result = await applyPatch(
      [
        { type: 'file_edit', action: 'update', target: 'notes.txt', content: 'TOKEN=mine\n' },
        { type: 'file_edit', action: 'copy', target: 'notes.txt', metadata: { destination: 'leak.txt' } },
        { type: 'git_operation', action: 'add', target: '.env' },
        { type: 'git_operation', action: 'add', target: 'notes.txt' },
        // A glob would stage server.key; taken literally it names no file.
        { type: 'git_operation', action: 'add', target: 'serv*' },
      ],
      { root: repo.path, env },
    );
    expect(result.results.map((r) => r.status)).toEqual(['failed', 'failed', 'failed', 'failed', 'failed']);
    expect(result.results.slice(0, 4).map((r) => r.error)).toEqual(
      Array(4).fill(expect.stringMatching(/^protected file/)),
    );
    expect(await readFile(join(repo.path, '.env'), 'utf8')).toBe('TOKEN=secret\n');
    await expect(readFile(join(repo.path, 'leak.txt'))).rejects.toThrow();
    expect(await git(repo.path, ['diff', '--cached', '--name-only'])).toBe('');
  });

  it('dry-run runs nothing', async () => {
    const result = await applyPatch([{ type: 'shell_command', action: 'run', content: 'touch ran.txt' }], {
      root: repo.path,
      env,
      dryRun: true,
    });
    expect(result.results[0]?.status).toBe('planned');
    await expect(readFile(join(repo.path, 'ran.txt'))).rejects.toThrow();
  });

  it('applies a unified diff; a hunk that does not apply is a clear error; diff paths are checked', async () => {
    const good = [
      'diff --git a/src/a.js b/src/a.js',
      '--- a/src/a.js',
      '+++ b/src/a.js',
      '@@ -1 +1 @@',
      '-a',
      '+b',
      '',
    ].join('\n');
    const bad = good.replace('-a', '-zzz');
    const escape = ['--- a/../outside.txt', '+++ b/../outside.txt', '@@ -0,0 +1 @@', '+x', ''].join('\n');
    const result = await applyPatch(
      [...parsePatch(good).commands, ...parsePatch(bad).commands, ...parsePatch(escape).commands],
      { root: repo.path, env },
    );
    expect(result.results.map((r) => r.status)).toEqual(['succeeded', 'failed', 'failed']);
    expect(result.results[1]?.error).toMatch(/does not apply/);
    expect(result.results[2]?.error).toMatch(/leaves the workspace/);
    expect(await readFile(join(repo.path, 'src/a.js'), 'utf8')).toBe('b\n');
  });

  it('a diff applies on top of changes not yet staged (a 3-way apply alone refuses: does not match index)', async () => {
    const result = await applyPatch(
      [
        { type: 'file_edit', action: 'update', target: 'src/a.js', content: 'edited\n' },
        ...parsePatch(['--- a/src/a.js', '+++ b/src/a.js', '@@ -1 +1,2 @@', ' edited', '+more', ''].join('\n'))
          .commands,
      ],
      { root: repo.path, env },
    );
    expect(result.summary).toBe('executed 2, succeeded 2, failed 0');
    expect(await readFile(join(repo.path, 'src/a.js'), 'utf8')).toBe('edited\nmore\n');
  });

  it('auto-commit before and after; in stop-on-error mode a failure rolls the workspace back unchanged', async () => {
    const start = await git(repo.path, ['rev-parse', 'HEAD']);
    const ok = await applyPatch([{ type: 'file_edit', action: 'create', target: 'one.txt', content: '1' }], {
      root: repo.path,
      env,
      autoCommit: true,
    });
    expect(ok.summary).toBe('executed 1, succeeded 1, failed 0');
    expect((await git(repo.path, ['log', '--format=%s', `${start}..HEAD`])).split('\n')).toEqual([
      '[Worker Auto-Commit] after patch',
      '[Worker Auto-Commit] before patch',
    ]);

    const head = await git(repo.path, ['rev-parse', 'HEAD']);
    const failed = await applyPatch(
      [
        { type: 'file_edit', action: 'create', target: 'two.txt', content: '2' },
        { type: 'file_edit', action: 'update', target: 'README.md', content: 'overwritten' },
        { type: 'shell_command', action: 'run', content: 'exit 1' },
        { type: 'file_edit', action: 'create', target: 'three.txt', content: '3' },
      ],
      { root: repo.path, env, autoCommit: true, onError: 'stop' },
    );
    expect(failed.summary).toBe('executed 3, succeeded 2, failed 1 (rolled back)');
    expect(await git(repo.path, ['status', '--porcelain'])).toBe('');
    await expect(readFile(join(repo.path, 'two.txt'))).rejects.toThrow();
    expect(await readFile(join(repo.path, 'README.md'), 'utf8')).toBe('# r\n');
    expect(await git(repo.path, ['rev-parse', 'HEAD^'])).toBe(head);
  });
});
