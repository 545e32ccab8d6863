import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { parseSuite, type EvalReport } from '@codefleet/eval';
import { createTempDir, createTempRepo, git, waitFor, type TempDir, type TempRepo } from '@codefleet/testkit';
import { cli, openCliQueue } from './cli-helpers.js';

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

/** `eval mine` of the test's repository into suite.jsonl, named acme/lib, with `extra` flags. */
function mine(...extra: string[]) {
  return cli(
    dir?.path ?? '',
    'eval',
    'mine',
    '--repo',
    repo?.path ?? '',
    '--name',
    'acme/lib',
    '--out',
    'suite.jsonl',
    ...extra,
  );
}

describe('codefleet eval mine', () => {
  it('writes a suite of tasks from a local repository, and a second run adds only what is new', async () => {
    dir = await createTempDir('eval-cli');
    repo = await minedRepo(4);
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\n');
    const first = await mine('--max', '2');
    expect(first).toMatchObject({ code: 0 });
    expect(first.out).toMatch(/^eval mine: read 5 of 5 commits; 2 tasks; passed over: 1 root commit \(2 new\) in /);
    const suite = parseSuite(await readFile(join(dir.path, 'suite.jsonl'), 'utf8'));
    expect(suite.instances.map((i) => [i.instance_id, i.split])).toEqual([
      ['acme__lib-9', 'holdout'],
      [`acme__lib-${(await git(repo.path, ['rev-parse', 'HEAD~1'])).slice(0, 12)}`, 'dev'],
    ]);

    await repo.commit({ 'src/lib.js': 'export const v = 5;\n', 'test/lib.test.js': '// expects 5\n' }, 'Set v to 5');
    const second = await mine('--max', '3');
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

/** A node project whose `npm test` runs `node --test`, and two fixes that each came with their test. */
async function fixedRepo(): Promise<TempRepo> {
  const r = await createTempRepo({
    files: {
      'package.json': JSON.stringify({ name: 'lib', private: true, type: 'module', scripts: { test: 'node --test' } }),
      'src/lib.js': 'export const one = () => 1;\n',
      'test/one.test.js':
        "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { one } from '../src/lib.js';\ntest('one', () => assert.equal(one(), 1));\n",
    },
  });
  for (const [name, n] of [
    ['two', 2],
    ['three', 3],
  ] as const) {
    await r.commit(
      {
        'src/lib.js': `${await readFile(join(r.path, 'src', 'lib.js'), 'utf8')}export const ${name} = () => ${n};\n`,
        [`test/${name}.test.js`]: `import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { ${name} } from '../src/lib.js';\ntest('${name}', () => assert.equal(${name}(), ${n}));\n`,
      },
      `Add ${name}()`,
    );
  }
  return r;
}

describe('codefleet eval run and report', () => {
  it('runs the oracle and an empty agent as jobs: 100% and 0% resolved, and a second run redoes nothing', async () => {
    dir = await createTempDir('eval-run');
    repo = await fixedRepo();
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nlogging:\n  level: silent\n');
    const mined = await mine('--holdout', '0');
    expect(mined.out).toContain('2 tasks');
    const suite = ['--suite', 'suite.jsonl', '--configuration', 'oracle', '--configuration', 'empty'];

    const running = cli(dir.path, 'eval', 'run', ...suite, '--repo', repo.path, '--max-per-repo', '4');
    // An eval run that ends before its jobs are queued stops the waits below, saying how.
    const early = new AbortController();
    void running.then((result) => early.abort(new Error(`eval run ended early: ${JSON.stringify(result)}`)));
    const dataDir = join(dir.path, 'data');
    await waitFor(() => existsSync(join(dataDir, 'queue.sqlite')), { what: 'the queue file', signal: early.signal });
    const queue = openCliQueue(dir.path);
    try {
      await waitFor(async () => (await queue.stats()).depth === 4, {
        what: 'the four eval jobs queued',
        signal: early.signal,
      });
      const lease = await queue.claim({ workerId: 'peek' });
      expect(lease?.job).toMatchObject({ priority: 'low', source: { kind: 'eval' }, base_commit: expect.any(String) });
      expect(lease?.job.hidden_tests?.patch).toContain('+++ b/test/');
      await lease?.release();
    } finally {
      await queue.close();
    }
    const worked = await cli(dir.path, 'worker', '--once');
    // The empty configuration's jobs fail (nothing changed), as they must: dead-lettered, exit 1.
    expect(worked).toEqual({ code: 1, out: 'processed 4: 2 done, 0 retrying, 2 dead-lettered, 0 released', err: '' });
    const ran = await running;
    expect(ran).toMatchObject({ code: 0 });
    expect(ran.out).toMatch(/^eval run: 4 of 4 finished; suite [0-9a-f]{64}$/);

    const report = await cli(dir.path, 'eval', 'report', ...suite, '--format', 'json');
    const parsed = JSON.parse(report.out) as EvalReport;
    expect(parsed.configs.map((c) => [c.config, c.resolved.count, c.resolved.of])).toEqual([
      ['oracle', 2, 2],
      ['empty', 0, 2],
    ]);
    expect(parsed.header).toMatchObject({ trials: 1, instances: 2, suite: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(parsed.comparisons[0]).toMatchObject({ a: 'oracle', b: 'empty', instances: 2, wins: 2 });
    // Two instances call no winner.
    expect(parsed.comparisons[0]?.winner).toBeUndefined();
    expect(parsed.comparisons[0]?.reason).toMatch(/^only 2 paired instances/);
    const markdown = await cli(dir.path, 'eval', 'report', ...suite);
    expect(markdown.out).toContain('| oracle | 2/2 (100.0%) |');
    expect(markdown.out).toContain('| empty | 0/2 (0.0%) |');

    // Everything finished: a second run queues nothing.
    const again = await cli(dir.path, 'eval', 'run', ...suite, '--repo', repo.path);
    expect(again.out).toMatch(/^eval run: 4 of 4 finished/);
    expect(again.err).toContain('(4 earlier)');
  });
});
