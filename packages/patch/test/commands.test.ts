import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempRepo, git, gitTestEnv, type TempRepo } from '@codefleet/testkit';
import { applyPatch, parsePatch } from '../src/index.js';

// Shell and git commands of a patch, run for real in a temporary git repository.
describe('applyPatch: shell and git commands', () => {
  let repo: TempRepo;
  const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' };
  beforeEach(async () => { repo = await createTempRepo({ files: { 'README.md': '# r\n', 'src/a.js': 'a\n' } }); });
  afterEach(async () => { await repo.dispose(); });

  it('runs Markdown shell blocks in order, in the workspace, with only the given environment', async () => {
    const { commands } = parsePatch(['```js:src/b.js', 'b', '```', '```sh', 'cat src/b.js > copy.txt; echo "token=${GITHUB_TOKEN:-none}" >> copy.txt', '```'].join('\n'));
    const result = await applyPatch(commands, { root: repo.path, env });
    expect(result.summary).toBe('executed 2, succeeded 2, failed 0');
    expect(await readFile(join(repo.path, 'copy.txt'), 'utf8')).toBe('b\ntoken=none\n');
  });

  it('a command that never ends is killed with its children at the timeout; a failing one reports its exit', async () => {
    const result = await applyPatch([
      { type: 'shell_command', action: 'run', content: 'sleep 300 & sleep 300' },
      { type: 'shell_command', action: 'run', content: 'exit 3' },
      { type: 'shell_command', action: 'run', content: 'true', workdir: '../' },
    ], { root: repo.path, env, shellTimeoutMs: 500 });
    expect(result.results.map((r) => r.error)).toEqual([
      expect.stringMatching(/timed out after 500 ms/), 'exit 3', expect.stringMatching(/leaves the workspace/),
    ]);
  });

  it('git add, commit and checkout on paths inside the workspace; never into .git or onto branches', async () => {
    await writeFile(join(repo.path, 'src/a.js'), 'changed\n');
    await writeFile(join(repo.path, 'new.txt'), 'new\n');
    const result = await applyPatch([
      { type: 'git_operation', action: 'add', target: 'new.txt' },
      { type: 'git_operation', action: 'commit', content: 'add new.txt' },
      { type: 'git_operation', action: 'checkout', target: 'src/a.js' },
      { type: 'git_operation', action: 'checkout' },
      { type: 'git_operation', action: 'add', target: '.git/config' },
    ], { root: repo.path, env });
    expect(result.results.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'failed', 'failed']);
    expect(await git(repo.path, ['log', '-1', '--format=%s'])).toBe('add new.txt');
    expect(await readFile(join(repo.path, 'src/a.js'), 'utf8')).toBe('a\n');
  });

  it('dry-run runs nothing', async () => {
    const result = await applyPatch([{ type: 'shell_command', action: 'run', content: 'touch ran.txt' }], { root: repo.path, env, dryRun: true });
    expect(result.results[0]?.status).toBe('planned');
    await expect(readFile(join(repo.path, 'ran.txt'))).rejects.toThrow();
  });
});
