import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createTempRepo, git, gitTestEnv, type TempRepo } from '@codefleet/testkit';
import {
  formatSuite,
  instancePrefix,
  isTestPath,
  mineCommits,
  parseSuite,
  statementOf,
  SuiteError,
  suiteDigest,
  toSwebench,
  type Instance,
} from '../src/index.js';

let repo: TempRepo | undefined;
afterEach(async () => {
  await repo?.dispose();
  repo = undefined;
});

const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '' };

/** A history with one commit of each kind mining must tell apart, oldest first. */
async function history(r: TempRepo): Promise<Record<string, string>> {
  const sha: Record<string, string> = {};
  // Latin-1 text (no NUL: git calls it text) cannot travel in a JSON suite line.
  await mkdir(join(r.path, 'src'), { recursive: true });
  await writeFile(join(r.path, 'src', 'latin.js'), Buffer.from('// caf\xe9\n', 'latin1'));
  sha.latin1 = await r.commit({ 'test/latin.test.js': "test('café', () => {});\n" }, 'Latin-1 data');
  sha.srcOnly = await r.commit({ 'src/a.js': 'export const a = 1;\n' }, 'Add a');
  sha.testsOnly = await r.commit({ 'test/a.test.js': "test('a', () => {});\n" }, 'Test a');
  sha.plain = await r.commit(
    { 'src/a.js': 'export const a = 2;\n', 'test/a.test.js': "test('a is 2', () => {});\n" },
    'Make a two\n\nBecause two is better.',
  );
  sha.docsAndTests = await r.commit({ 'README.md': '# two\n', 'test/b.test.js': "test('b', () => {});\n" }, 'Docs');
  sha.squash = await r.commit(
    { 'src/parse.js': 'export const parse = (s) => s.trim();\n', 'src/parse.test.js': "test('parse', () => {});\n" },
    'Trim input in parse (#12)',
  );
  await r.git(['checkout', '--quiet', '-b', 'feature']);
  await r.commit({ 'lib/b.py': 'B = 1\n' }, 'b');
  await r.commit({ 'tests/test_b.py': 'def test_b():\n    assert True\n' }, 'test b');
  await r.git(['checkout', '--quiet', 'main']);
  await r.git(['merge', '--quiet', '--no-ff', 'feature', '-m', 'Merge pull request #14 from someone/feature\n\nAdd B']);
  sha.merge = await r.git(['rev-parse', 'HEAD']);
  await writeFile(join(r.path, 'src', 'logo.png'), Buffer.from([0, 1, 2, 0, 255]));
  sha.binary = await r.commit({ 'test/logo.test.js': "test('logo', () => {});\n" }, 'Logo');
  return sha;
}

describe('eval mine', () => {
  it('keeps commits changing tests and code, splits them, names them and holds out the newest', async () => {
    repo = await createTempRepo();
    const sha = await history(repo);
    const mined: Instance[] = [];
    const progress = await mineCommits({
      gitDir: repo.path,
      repo: 'acme/widgets',
      env,
      holdoutShare: 0.34,
      onInstance: async (instance) => {
        mined.push(instance);
      },
    });
    expect(progress.skipped).toEqual({
      'root commit': 1,
      'no test change': 1,
      'no change outside tests and docs': 2,
      'binary change': 1,
      'not UTF-8 text': 1,
    });
    expect(mined.map((i) => [i.instance_id, i.base_commit, i.statement_source, i.split])).toEqual([
      ['acme__widgets-14', sha.squash, 'pull_request', 'holdout'],
      ['acme__widgets-12', sha.docsAndTests, 'pull_request', 'dev'],
      [`acme__widgets-${(sha.plain ?? '').slice(0, 12)}`, sha.testsOnly, 'commit', 'dev'],
    ]);
    const [merge, squash, plain] = mined;
    expect(merge?.problem_statement).toBe('Add B');
    expect(merge?.patch).toContain('+++ b/lib/b.py');
    expect(merge?.test_patch).toContain('+++ b/tests/test_b.py');
    expect(squash?.patch).toContain('+++ b/src/parse.js');
    expect(squash?.patch).not.toContain('parse.test.js');
    expect(squash?.test_patch).toContain('+++ b/src/parse.test.js');
    expect(plain?.problem_statement).toBe('Make a two\n\nBecause two is better.');

    // Fix and tests together at the base make the commit's tree again.
    const check = await createTempRepo();
    try {
      await check.git(['fetch', '--quiet', repo.path, 'main']);
      await check.git(['checkout', '--quiet', '--detach', merge?.base_commit ?? '']);
      for (const [name, text] of [
        ['fix.diff', merge?.patch ?? ''],
        ['tests.diff', merge?.test_patch ?? ''],
      ] as const) {
        await writeFile(join(check.path, '..', `${name}`), text);
        await git(check.path, ['apply', join(check.path, '..', name)]);
      }
      await check.git(['add', '--all']);
      expect(await check.git(['write-tree'])).toBe(await repo.git(['rev-parse', `${sha.merge}^{tree}`]));
    } finally {
      await check.dispose();
    }
  });

  it('resumes: what an earlier run mined is not handed over again; --max bounds it', async () => {
    repo = await createTempRepo();
    await history(repo);
    const ids: string[] = [];
    const onInstance = async (instance: Instance) => {
      ids.push(instance.instance_id);
    };
    await mineCommits({ gitDir: repo.path, repo: 'acme/widgets', env, max: 1, onInstance });
    expect(ids).toEqual(['acme__widgets-14']);
    await mineCommits({ gitDir: repo.path, repo: 'acme/widgets', env, done: new Set(ids), onInstance });
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
  });

  it('reads statements and prefixes as GitHub and SWE-bench write them', () => {
    expect(statementOf('Merge pull request #7 from a/b\n\nFix it\n\nDetails')).toEqual({
      text: 'Fix it\n\nDetails',
      number: 7,
    });
    expect(statementOf('Fix it (#8)\n\n* one')).toEqual({ text: 'Fix it (#8)\n\n* one', number: 8 });
    expect(statementOf('Fix it')).toEqual({ text: 'Fix it' });
    expect(instancePrefix('https://github.com/pallets/click.git')).toBe('pallets__click');
    expect(instancePrefix('pallets/click')).toBe('pallets__click');
    expect(instancePrefix('/srv/repos/widgets')).toBe('repos__widgets');
    expect(['src/a.test.ts', 'tests/x.py', 'pkg/x_test.go', 'test_y.py', 'a/__tests__/b.js'].map(isTestPath)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['src/a.ts', 'src/testing.ts', 'lib/contest.py', 'latest/x.js'].map(isTestPath)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('suite files', () => {
  const instance: Instance = {
    instance_id: 'acme__widgets-1',
    repo: 'acme/widgets',
    base_commit: 'a'.repeat(40),
    created_at: '2026-01-01T00:00:00Z',
    problem_statement: 'Fix it',
    statement_source: 'issue',
    hints_text: '',
    patch: 'diff --git a/x b/x\n',
    test_patch: 'diff --git a/t b/t\n',
    FAIL_TO_PASS: ['t > fails'],
    PASS_TO_PASS: ['t > passes'],
    NEW_TO_PASS: ['t > new'],
    flaky_excluded: ['t > flaky'],
    plan_digest: 'b'.repeat(64),
    split: 'dev',
  };

  it('round-trips, is named by its digest, and reads lists written as SWE-bench writes them', () => {
    const text = formatSuite([instance]);
    expect(parseSuite(text)).toEqual({ digest: suiteDigest(text), instances: [instance] });
    expect(suiteDigest(text)).toMatch(/^[0-9a-f]{64}$/);
    expect(suiteDigest(`${text}\n`)).not.toBe(suiteDigest(text));
    const exported = JSON.parse(toSwebench([instance])) as Record<string, unknown>;
    expect(exported).toMatchObject({
      instance_id: 'acme__widgets-1',
      FAIL_TO_PASS: '["t > fails","t > new"]',
      PASS_TO_PASS: '["t > passes"]',
    });
    expect(exported).not.toHaveProperty('flaky_excluded');
    // SWE-bench's own line reads back, defaults filling codefleet's fields.
    const back = parseSuite(`${JSON.stringify({ ...exported, statement_source: 'issue' })}\n`).instances[0];
    expect(back?.FAIL_TO_PASS).toEqual(['t > fails', 't > new']);
    expect(back?.split).toBe('dev');
  });

  it('names the line and field of a bad instance, and a repeated id', () => {
    const good = formatSuite([instance]);
    const bad = `${good}${JSON.stringify({ ...instance, instance_id: 'other', base_commit: 'HEAD' })}\n`;
    expect(() => parseSuite(bad)).toThrow(new SuiteError(2, 'base_commit: expected a full commit id'));
    expect(() => parseSuite(`${good}not json\n`)).toThrow('line 2: not JSON');
    expect(() => parseSuite(`${good}${good}`)).toThrow('line 2: instance_id acme__widgets-1 appears twice');
  });
});
