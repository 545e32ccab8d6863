import { writeFile } from 'node:fs/promises';
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
  afterEach(async () => { await dir.dispose(); });
  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const code = await runCli(['--config', join(dir.path, 'config.yaml'), ...argv], {
      out: (l) => out.push(l), err: (l) => out.push(l), cwd: dir.path, env: { PATH: process.env.PATH, HOME: dir.path, GITHUB_TOKEN: 'ghp_plantedplantedplantedplanted0000', ...gitTestEnv() },
    });
    return { code, out: out.join('\n') };
  };

  it('applies a Markdown patch, prints the plan and the summary, exit 0; refusals give exit 1 with the reason', async () => {
    await writeFile(join(dir.path, 'good.md'), ['```js:src/a.js', 'export const a = 1;', '```', '```sh', 'echo "token=${GITHUB_TOKEN:-none}" > env.txt', '```'].join('\n'));
    const good = await cli('patch', 'apply', 'good.md', '--workspace', '.');
    expect(good.code).toBe(0);
    expect(good.out).toContain('plan   1. file_edit create src/a.js');
    expect(good.out).toContain('executed 2, succeeded 2, failed 0');
    const { readFile } = await import('node:fs/promises');
    expect(await readFile(join(dir.path, 'env.txt'), 'utf8')).toBe('token=none\n');

    await writeFile(join(dir.path, 'bad.json'), JSON.stringify([{ type: 'file_edit', action: 'create', target: '../escape.txt', content: 'x' }]));
    const bad = await cli('patch', 'apply', 'bad.json', '--workspace', '.', '--json');
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out)).toMatchObject({ format: 'json', failed: 1, results: [{ status: 'failed', error: expect.stringMatching(/leaves the workspace/) }] });

    await writeFile(join(dir.path, 'broken.json'), '[{"type": ');
    const broken = await cli('patch', 'apply', 'broken.json', '--workspace', '.');
    expect(broken.code).toBe(1);
    expect(broken.out).toMatch(/invalid JSON patch/);
  });
});
