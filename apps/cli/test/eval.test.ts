import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseSuite } from '@codefleet/eval';
import { createTempDir, createTempRepo, git, type TempDir, type TempRepo } from '@codefleet/testkit';
import { cli } from './cli-helpers.js';

let dir: TempDir | undefined;
let repo: TempRepo | undefined;
afterEach(async () => {
  await repo?.dispose();
  await dir?.dispose();
  repo = undefined;
  dir = undefined;
});

/** A repository with `n` commits that each change code and its test, the last one a squash of PR #9. */
async function minedRepo(n: number): Promise<TempRepo> {
  const r = await createTempRepo();
  for (let i = 1; i <= n; i += 1) {
    await r.commit(
      { 'src/lib.js': `export const v = ${i};\n`, 'test/lib.test.js': `// expects ${i}\n` },
      i === n ? `Set v to ${i} (#9)` : `Set v to ${i}`,
    );
  }
  return r;
}

describe('codefleet eval mine', () => {
  it('writes a suite of tasks from a local repository, and a second run adds only what is new', async () => {
    dir = await createTempDir('eval-cli');
    repo = await minedRepo(4);
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\n');
    const first = await cli(
      dir.path,
      'eval',
      'mine',
      '--repo',
      repo.path,
      '--name',
      'acme/lib',
      '--out',
      'suite.jsonl',
      '--max',
      '2',
    );
    expect(first).toMatchObject({ code: 0 });
    expect(first.out).toMatch(/^eval mine: read 5 of 5 commits; 2 tasks; passed over: 1 root commit \(2 new\) in /);
    const suite = parseSuite(await readFile(join(dir.path, 'suite.jsonl'), 'utf8'));
    expect(suite.instances.map((i) => [i.instance_id, i.split])).toEqual([
      ['acme__lib-9', 'holdout'],
      [`acme__lib-${(await git(repo.path, ['rev-parse', 'HEAD~1'])).slice(0, 12)}`, 'dev'],
    ]);

    await repo.commit({ 'src/lib.js': 'export const v = 5;\n', 'test/lib.test.js': '// expects 5\n' }, 'Set v to 5');
    const second = await cli(
      dir.path,
      'eval',
      'mine',
      '--repo',
      repo.path,
      '--name',
      'acme/lib',
      '--out',
      'suite.jsonl',
      '--max',
      '3',
    );
    expect(second.out).toContain('(1 new)');
    const again = parseSuite(await readFile(join(dir.path, 'suite.jsonl'), 'utf8'));
    expect(again.instances).toHaveLength(3);
    expect(again.digest).not.toBe(suite.digest);
  });

  it('refuses a suite file it cannot read, and a repository that is not one, saying why', async () => {
    dir = await createTempDir('eval-cli');
    repo = await minedRepo(2);
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\n');
    await writeFile(join(dir.path, 'bad.jsonl'), '{"instance_id": "x"}\n');
    const bad = await cli(dir.path, 'eval', 'mine', '--repo', repo.path, '--out', 'bad.jsonl');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain('line 1: ');
    expect(await readFile(join(dir.path, 'bad.jsonl'), 'utf8')).toBe('{"instance_id": "x"}\n');
    const notRepo = await cli(dir.path, 'eval', 'mine', '--repo', dir.path, '--out', 'x.jsonl');
    expect(notRepo.code).not.toBe(0);
    expect(notRepo.err).toContain('git rev-list failed');
    const badShare = await cli(dir.path, 'eval', 'mine', '--repo', repo.path, '--out', 'x.jsonl', '--holdout', '1');
    expect(badShare.code).not.toBe(0);
    expect(badShare.err).toContain('expected a share from 0 up to (not including) 1');
  });
});
