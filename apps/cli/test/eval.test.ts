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

/**
 * Waits until the CLI's queue holds `depth` jobs, which `command` (running) queues, then hands
 * the queue to `look`. A command that ends first stops the wait, saying how it ended.
 */
async function queued(
  command: Promise<unknown>,
  depth: number,
  look: (queue: ReturnType<typeof openCliQueue>) => Promise<void> = async () => {},
): Promise<void> {
  const early = new AbortController();
  void command.then((result) => early.abort(new Error(`the command ended early: ${JSON.stringify(result)}`)));
  const dataDir = join(dir?.path ?? '', 'data');
  await waitFor(() => existsSync(join(dataDir, 'queue.sqlite')), { what: 'the queue file', signal: early.signal });
  const queue = openCliQueue(dir?.path ?? '');
  try {
    await waitFor(async () => (await queue.stats()).depth === depth, {
      what: `${depth} jobs queued`,
      signal: early.signal,
    });
    await look(queue);
  } finally {
    await queue.close();
  }
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
  it('runs the oracle, an empty agent and an agent as jobs, reports them, and a second run redoes nothing', async () => {
    dir = await createTempDir('eval-run');
    repo = await fixedRepo();
    // The agent under evaluation (a scripted stand-in for a model): adds the function its task names.
    await writeFile(
      join(dir.path, 'agent.mjs'),
      [
        'const args = new Map(); for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i], process.argv[i + 1]);',
        "const fs = await import('node:fs'); const path = await import('node:path');",
        "const prompt = fs.readFileSync(args.get('--prompt-file'), 'utf8');",
        "const lib = path.join(args.get('--workdir'), 'src', 'lib.js');",
        "for (const [name, n] of [['two', 2], ['three', 3]])",
        "  if (args.get('--pass') === 'implement' && prompt.includes(`Add ${name}()`)) fs.appendFileSync(lib, `export const ${name} = () => ${n};\\n`);",
        '',
      ].join('\n'),
    );
    await writeFile(
      join(dir.path, 'config.yaml'),
      'data_dir: ./data\nlogging:\n  level: silent\nagents:\n  script:\n    module: ./agent.mjs\n',
    );
    const mined = await mine('--holdout', '0');
    expect(mined.out).toContain('2 tasks');
    const suite = ['--suite', 'suite.jsonl', ...['oracle', 'empty', 'script'].flatMap((c) => ['--configuration', c])];

    const running = cli(dir.path, 'eval', 'run', ...suite, '--repo', repo.path, '--max-per-repo', '6');
    await queued(running, 6, async (queue) => {
      const lease = await queue.claim({ workerId: 'peek' });
      expect(lease?.job).toMatchObject({ priority: 'low', source: { kind: 'eval' }, base_commit: expect.any(String) });
      expect(lease?.job.hidden_tests?.patch).toContain('+++ b/test/');
      await lease?.release();
    });
    const worked = await cli(dir.path, 'worker', '--once');
    // The empty configuration's jobs fail (nothing changed), as they must: dead-lettered, exit 1.
    expect(worked).toEqual({ code: 1, out: 'processed 6: 4 done, 0 retrying, 2 dead-lettered, 0 released', err: '' });
    const ran = await running;
    expect(ran).toMatchObject({ code: 0 });
    expect(ran.out).toMatch(/^eval run: 6 of 6 finished; suite [0-9a-f]{64}$/);

    const report = await cli(dir.path, 'eval', 'report', ...suite, '--format', 'json');
    const parsed = JSON.parse(report.out) as EvalReport;
    expect(parsed.configs.map((c) => [c.config, c.resolved.count, c.resolved.of])).toEqual([
      ['oracle', 2, 2],
      ['empty', 0, 2],
      ['script', 2, 2],
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
    expect(again.out).toMatch(/^eval run: 6 of 6 finished/);
    expect(again.err).toContain('(6 earlier)');

    // The cheapest configuration reaching 50%, written as the repository's chain for review.
    const chain = await cli(dir.path, 'eval', 'report', ...suite, '--target', '0.5', '--write-chain', 'chain.yaml');
    expect(chain).toMatchObject({ code: 0 });
    expect(chain.out).toContain('**Cheapest to 50.0%:** script resolves 100%');
    expect(await readFile(join(dir.path, 'chain.yaml'), 'utf8')).toMatch(
      /\nagents:\n {2}chains:\n {4}acme__lib: \[script\]\n$/,
    );
    const none = await cli(
      dir.path,
      'eval',
      'report',
      '--suite',
      'suite.jsonl',
      '--configuration',
      'empty',
      '--target',
      '0.5',
      '--write-chain',
      'x.yaml',
    );
    expect(none.code).toBe(1);
    expect(none.err).toContain('no chain written: no configuration resolves 50% of the tasks');
  });
});

/** A test file of `names`, each asserting `name()` from src/lib.js is `value`. */
const testFile = (checks: Record<string, number>) =>
  [
    "import { test } from 'node:test';",
    "import assert from 'node:assert/strict';",
    `import { ${Object.keys(checks).join(', ')} } from '../src/lib.js';`,
    ...Object.entries(checks).map(([name, value]) => `test('${name}', () => assert.equal(${name}(), ${value}));`),
    '',
  ].join('\n');

/**
 * One commit of each kind validation must tell apart, on a project whose `npm test` is
 * `node --test`: a real fix (#3), one with a flaky test (#4), one whose fix breaks a passing
 * test (#5), and one whose tests pass without the fix (#6).
 */
async function validatedRepo(): Promise<TempRepo> {
  const lib = (extra: string) => `export const one = () => 1;\n${extra}`;
  const r = await createTempRepo({
    files: {
      'package.json': JSON.stringify({ name: 'lib', private: true, type: 'module', scripts: { test: 'node --test' } }),
      'src/lib.js': lib(''),
      'test/one.test.js': testFile({ one: 1 }),
    },
  });
  await r.commit(
    { 'src/lib.js': lib('export const two = () => 2;\n'), 'test/two.test.js': testFile({ two: 2 }) },
    'Add two (#3)',
  );
  const flaky = [
    "import { existsSync, rmSync, writeFileSync } from 'node:fs';",
    "test('flaky', () => { if (existsSync('.flip')) { rmSync('.flip'); assert.fail('flipped'); } writeFileSync('.flip', ''); });",
  ].join('\n');
  await r.commit(
    {
      'src/lib.js': lib('export const two = () => 2;\nexport const three = () => 3;\n'),
      'test/three.test.js': `${testFile({ three: 3 })}${flaky}\n`,
    },
    'Add three (#4)',
  );
  await r.commit(
    {
      'src/lib.js':
        'export const one = () => 0;\nexport const two = () => 2;\nexport const three = () => 3;\nexport const zero = () => 0;\n',
      'test/zero.test.js': testFile({ zero: 0 }),
    },
    'Add zero, break one (#5)',
  );
  await r.commit(
    {
      'src/lib.js': `${await readFile(join(r.path, 'src', 'lib.js'), 'utf8')}// tidy\n`,
      'test/again.test.js': testFile({ two: 2 }).replace("test('two'", "test('two again'"),
    },
    'Test two again (#6)',
  );
  return r;
}

describe('codefleet eval validate', () => {
  it('keeps real tasks with their test lists, leaves flaky tests out, and says why the others are rejected', async () => {
    dir = await createTempDir('eval-validate');
    repo = await validatedRepo();
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nlogging:\n  level: silent\n');
    expect((await mine('--holdout', '0')).out).toContain('4 tasks');
    const validated = await cli(
      dir.path,
      'eval',
      'validate',
      '--suite',
      'suite.jsonl',
      '--out',
      'valid.jsonl',
      '--repo',
      repo.path,
      '--no-oracle',
    );
    expect(validated).toMatchObject({ code: 0 });
    expect(validated.out).toBe(
      'eval validate: 2 of 4 valid; rejected: 1 no test goes from failing or absent to passing; 1 the fix breaks 1 test(s) that passed: one',
    );
    const valid = parseSuite(await readFile(join(dir.path, 'valid.jsonl'), 'utf8')).instances;
    expect(valid.map((i) => [i.instance_id, i.FAIL_TO_PASS, i.NEW_TO_PASS, i.flaky_excluded])).toEqual([
      ['acme__lib-4', [], ['three'], ['flaky']],
      ['acme__lib-3', [], ['two'], []],
    ]);
    expect(valid[0]?.PASS_TO_PASS).toEqual(expect.arrayContaining(['one', 'two']));
    expect(valid[0]?.plan_digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('then runs the oracle and an empty agent through the fleet, keeping the task only when the oracle alone resolves', async () => {
    dir = await createTempDir('eval-validate');
    repo = await validatedRepo();
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nlogging:\n  level: silent\n');
    await mine('--holdout', '0');
    const args = ['--suite', 'suite.jsonl', '--out', 'valid.jsonl', '--repo', repo.path, '--instance', 'acme__lib-3'];
    const validating = cli(dir.path, 'eval', 'validate', ...args);
    await queued(validating, 2);
    expect((await cli(dir.path, 'worker', '--once')).out).toBe(
      'processed 2: 1 done, 0 retrying, 1 dead-lettered, 0 released',
    );
    expect(await validating).toMatchObject({ code: 0, out: 'eval validate: 1 of 1 valid' });
    const [valid] = parseSuite(await readFile(join(dir.path, 'valid.jsonl'), 'utf8')).instances;
    expect(valid).toMatchObject({ instance_id: 'acme__lib-3', NEW_TO_PASS: ['two'] });
  });

  it('says why a task whose tests never ran with the fix is rejected: what its test step printed', async () => {
    dir = await createTempDir('eval-validate');
    repo = await fixedRepo();
    // The fix swaps the test script for one that runs no test.
    const manifest = { name: 'lib', private: true, type: 'module', scripts: { test: 'node -e 0' } };
    await repo.commit(
      {
        'package.json': JSON.stringify(manifest),
        'src/lib.js': 'export const one = () => 1;\nexport const four = () => 4;\n',
        'test/four.test.js': testFile({ four: 4 }),
      },
      'Add four (#7)',
    );
    await writeFile(join(dir.path, 'config.yaml'), 'data_dir: ./data\nlogging:\n  level: silent\n');
    await mine('--holdout', '0');
    const validated = await cli(
      dir.path,
      'eval',
      'validate',
      '--suite',
      'suite.jsonl',
      '--out',
      'valid.jsonl',
      '--repo',
      repo.path,
      '--no-oracle',
      '--instance',
      'acme__lib-7',
    );
    // What the step printed last differs by Node version (a warning on Node 22): the step is named.
    expect(validated.out).toMatch(
      /^eval validate: 0 of 1 valid; rejected: 1 no test was reported with the fix: test \(npm test\) said: \S/,
    );
  });
});

describe('codefleet enqueue with hidden tests', () => {
  it('--hidden-tests-file and --hidden-test: the job carries the tests, named; a name alone is refused', async () => {
    dir = await createTempDir('eval-enqueue');
    repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
    await writeFile(join(dir.path, 'agent.mjs'), '');
    await writeFile(
      join(dir.path, 'config.yaml'),
      'data_dir: ./data\nlogging:\n  level: silent\nagents:\n  script:\n    module: ./agent.mjs\n',
    );
    const tests = ['--- /dev/null', '+++ b/test/a.test.js', '@@ -0,0 +1 @@', '+// a test', ''].join('\n');
    await writeFile(join(dir.path, 'tests.diff'), tests);
    const args = ['enqueue', '--repo', repo.path, '--title', 'Graded in secret'];
    const alone = await cli(dir.path, ...args, '--hidden-test', 'a');
    expect(alone.code).not.toBe(0);
    expect(alone.err).toContain('--hidden-test names a test of --hidden-tests-file: give that file too');
    const queued = await cli(
      dir.path,
      ...args,
      '--hidden-tests-file',
      'tests.diff',
      '--hidden-test',
      'a',
      '--hidden-test',
      'b',
    );
    expect(queued).toMatchObject({ code: 0, err: '' });
    const queue = openCliQueue(dir.path);
    try {
      const lease = await queue.claim({ workerId: 'peek' });
      expect(lease?.job.hidden_tests).toEqual({ patch: tests, tests: ['a', 'b'] });
    } finally {
      await queue.close();
    }
  });
});
