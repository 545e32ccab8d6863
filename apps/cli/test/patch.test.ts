import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, gitTestEnv, type TempDir } from '@codefleet/testkit';
import { runCli } from '../src/index.js';

describe('codefleet patch apply', () => {
  let dir: TempDir;
  beforeEach(async () => {
    dir = await createTempDir('cli-patch');
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nlogging:\n  level: silent\n');
  });
  afterEach(async () => {
    await dir.dispose();
  });
  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const code = await runCli(['--config', join(dir.path, 'config.yaml'), ...argv], {
      out: (l) => out.push(l),
      err: (l) => out.push(l),
      cwd: dir.path,
      env: {
        PATH: process.env.PATH,
        HOME: dir.path,
        GITHUB_TOKEN: 'ghp_plantedplantedplantedplanted0000',
        ...gitTestEnv(),
      },
    });
    return { code, out: out.join('\n') };
  };

  it('applies a Markdown patch, prints the plan and the summary, exit 0; refusals give exit 1 with the reason', async () => {
    await writeFile(
      join(dir.path, 'good.md'),
      [
        '```js:src/a.js',
        'export const a = 1;',
        '```',
        '```sh',
        'echo "token=${GITHUB_TOKEN:-none}" > env.txt',
        '```',
      ].join('\n'),
    );
    const good = await cli('patch', 'apply', 'good.md', '--workspace', '.');
    expect(good.code).toBe(0);
    expect(good.out).toContain('plan   1. file_edit create src/a.js');
    expect(good.out).toContain('executed 2, succeeded 2, failed 0');
    expect(await readFile(join(dir.path, 'env.txt'), 'utf8')).toBe('token=none\n');

    await writeFile(
      join(dir.path, 'bad.json'),
      JSON.stringify([{ type: 'file_edit', action: 'create', target: '../escape.txt', content: 'x' }]),
    );
    const bad = await cli('patch', 'apply', 'bad.json', '--workspace', '.', '--json');
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out)).toMatchObject({
      format: 'json',
      failed: 1,
      results: [{ status: 'failed', error: expect.stringMatching(/leaves the workspace/) }],
    });

    await writeFile(join(dir.path, 'broken.json'), '[{"type": ');
    const broken = await cli('patch', 'apply', 'broken.json', '--workspace', '.');
    expect(broken.code).toBe(1);
    expect(broken.out).toMatch(/invalid JSON patch/);
  });

  it('a patch from which nothing can be read exits 1, never 0; an empty one is nothing to do', async () => {
    await writeFile(
      join(dir.path, 'prose.md'),
      'I would rename the helper and add a test.\n```python\nprint(1)\n```\n',
    );
    const prose = await cli('patch', 'apply', 'prose.md', '--workspace', '.');
    expect(prose.code).toBe(1);
    expect(prose.out).toContain('nothing applied: the patch holds no command the engine can read');
    await writeFile(join(dir.path, 'empty.md'), '\n');
    expect((await cli('patch', 'apply', 'empty.md', '--workspace', '.')).code).toBe(0);
  });

  it('reads the patch file as bytes: a diff of a latin1 file applies as it is; notes say how a diff applied', async () => {
    await writeFile(join(dir.path, 'menu.txt'), Buffer.from('caf\xe9\nthe\n', 'latin1'));
    const diff = Buffer.from('--- menu.txt\n+++ menu.txt\n@@ -1,3 +1,3 @@\n-caf\xe9\n+cr\xe8me\n the\n', 'latin1');
    await writeFile(join(dir.path, 'latin1.diff'), diff);
    const result = await cli('patch', 'apply', 'latin1.diff', '--workspace', '.');
    expect(result.code).toBe(0);
    expect(await readFile(join(dir.path, 'menu.txt'))).toEqual(Buffer.from('cr\xe8me\nthe\n', 'latin1'));
    expect(result.out).toContain('warn   hunk line counts did not fit their hunks and were recounted (1 hunk)');
    expect(result.out).toMatch(/^note {3}names without a\/ b\/ prefixes/m);
  });

  it('patch apply --help documents the JSON command format and the other formats', async () => {
    const help = await cli('patch', 'apply', '--help');
    for (const text of [
      '"type": "file_edit"',
      '"type": "shell_command"',
      '"type": "git_operation"',
      'rename, copy',
      'the destination in "content"',
      '"edits"',
      '/workspace/...',
      'SEARCH/REPLACE',
      '*** Begin Patch',
      '```console',
      'Exit code 0 only when',
    ])
      expect(help.out).toContain(text);
  });
});
