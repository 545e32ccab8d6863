import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createTempDir, writeFiles, type TempDir } from '@codefleet/testkit';
import {
  listingTestCommand,
  planVerification,
  LogScanner,
  runVerification,
  testStatuses,
  TestStatusScanner,
  type TestStatuses,
} from '../src/index.js';
import { defaultVerification, fixture, testEnv } from './helpers.js';

// Real runner output: see fixtures/test-status/README.md for how each was made.
const log = (name: string) => readFileSync(fixture(`test-status/${name}`), 'utf8');
const sorted = (statuses: TestStatuses) => ({
  passed: [...statuses.passed].sort(),
  failed: [...statuses.failed].sort(),
  skipped: [...statuses.skipped].sort(),
  omitted: statuses.omitted,
});

describe('testStatuses on real runner output', () => {
  it('every fixture keeps its colour codes, and no name does', () => {
    for (const name of [
      'jest-verbose.log',
      'vitest-verbose.log',
      'mocha-spec.log',
      'pytest-rA-v.log',
      'cargo-test.log',
    ]) {
      expect(log(name)).toContain('\x1b[');
      const { passed, failed, skipped } = testStatuses(log(name));
      expect([...passed, ...failed, ...skipped].join('\n')).not.toContain('\x1b');
    }
  });

  it('jest --verbose: file › describe › title; a title in two files is two tests', () => {
    expect(sorted(testStatuses(log('jest-verbose.log')))).toEqual({
      passed: [
        'test/math.test.js › math › adds',
        'test/math.test.js › math › nested › adds big numbers',
        'test/math.test.js › top level passes',
        'test/sub/other.test.js › math › adds with › in the name',
        'test/sub/other.test.js › top level passes',
      ],
      failed: [
        'test/math.test.js › math › nested › adds negatives',
        'test/math.test.js › math › subtracts',
        'test/sub/other.test.js › math › adds',
      ],
      skipped: ['test/math.test.js › math › divides', 'test/math.test.js › math › multiplies'],
      omitted: 0,
    });
  });

  it('vitest --reporter=verbose: its own `file > suite > test` names; the default reporter names none', () => {
    expect(sorted(testStatuses(log('vitest-verbose.log')))).toEqual({
      passed: [
        'test/math.test.js > math > adds',
        'test/math.test.js > math > nested > adds big numbers',
        'test/math.test.js > top level passes',
        'test/sub/other.test.js > math > adds with › in the name',
        'test/sub/other.test.js > top level passes',
      ],
      failed: [
        'test/math.test.js > math > nested > adds negatives',
        'test/math.test.js > math > subtracts',
        'test/sub/other.test.js > math > adds',
      ],
      skipped: ['test/math.test.js > math > divides', 'test/math.test.js > math > multiplies'],
      omitted: 0,
    });
    // Its tree prints titles without their suites: better nothing than wrong names.
    expect(testStatuses(log('vitest-default.log'))).toEqual({ passed: [], failed: [], skipped: [], omitted: 0 });
  });

  it('node:test: spec and TAP give the same names; no file is printed, so a title in two files is one (worst) test', () => {
    const expected = {
      passed: ['math › nested › adds big numbers', 'top level passes', 'with subtests › inner passes'],
      // `math › adds` passes in one file and fails in the other.
      failed: ['math › adds', 'math › nested › adds negatives', 'math › subtracts'],
      skipped: ['math › divides', 'math › multiplies', 'with subtests › inner skipped'],
      omitted: 0,
    };
    expect(sorted(testStatuses(log('node-spec.log')))).toEqual(expected);
    expect(sorted(testStatuses(log('node-tap.log')))).toEqual(expected);
  });

  it("mocha spec: mocha's full titles; pending tests are skipped", () => {
    expect(sorted(testStatuses(log('mocha-spec.log')))).toEqual({
      passed: ['math adds slowly', 'math nested adds big numbers', 'top level passes'],
      failed: ['math adds', 'math nested adds negatives', 'math subtracts'],
      skipped: ['math divides', 'math multiplies'],
      omitted: 0,
    });
  });

  it('mocha 3 spec (as expressjs/express ran until 2018): a pass marked ✓ counts as one', () => {
    expect(sorted(testStatuses(log('mocha-3-spec.log')))).toEqual({
      passed: ['math adds', 'math nested multiplies'],
      failed: ['math nested divides wrongly'],
      skipped: ['math nested pending one'],
      omitted: 0,
    });
  });

  it('pytest -rA -v: node ids; setup errors fail, xfail is skipped; -rA alone names no skipped test', () => {
    const verbose = sorted(testStatuses(log('pytest-rA-v.log')));
    expect(verbose).toEqual({
      passed: [
        'tests/sub/test_math.py::test_top_level_passes',
        'tests/test_math.py::TestNested::test_adds',
        'tests/test_math.py::test_adds',
        'tests/test_math.py::test_param[1-2]',
        'tests/test_math.py::test_param[x y-z]',
      ],
      failed: [
        'tests/sub/test_math.py::test_adds',
        'tests/test_math.py::TestNested::test_adds_wrong',
        'tests/test_math.py::test_param[2-2]',
        'tests/test_math.py::test_setup_error',
        'tests/test_math.py::test_subtracts',
      ],
      skipped: ['tests/test_math.py::test_divides', 'tests/test_math.py::test_known_bug'],
      omitted: 0,
    });
    // The short summary gives a skip's location (`SKIPPED [1] tests/test_math.py:12`), no id.
    expect(sorted(testStatuses(log('pytest-rA.log')))).toEqual({
      ...verbose,
      skipped: ['tests/test_math.py::test_known_bug'],
    });
  });

  it('go test -v: package and (sub)test, parents and subtests alike', () => {
    expect(sorted(testStatuses(log('go-test-v.log')))).toEqual({
      passed: [
        'example.com/fleet/calc TestAdd',
        'example.com/fleet/calc TestTable/negative/deeper',
        'example.com/fleet/calc TestTable/small',
        'example.com/fleet/calc TestTable/small/deeper',
        'example.com/fleet/other TestTopLevelPasses',
        'example.com/fleet/pass TestAdd',
      ],
      failed: [
        'example.com/fleet/calc TestSubtract',
        'example.com/fleet/calc TestTable',
        'example.com/fleet/calc TestTable/negative',
        'example.com/fleet/other TestAdd',
      ],
      skipped: ['example.com/fleet/calc TestSkipped', 'example.com/fleet/calc TestTable/with_space'],
      omitted: 0,
    });
  });

  it('cargo test --no-fail-fast: target and test path; doc-tests by their own name', () => {
    expect(sorted(testStatuses(log('cargo-test.log')))).toEqual({
      passed: [
        'src/lib.rs - add (line 3)',
        'src/lib.rs tests::adds',
        'src/lib.rs tests::nested::adds_big_numbers',
        'tests/other.rs tests::top_level_passes',
      ],
      failed: ['src/lib.rs tests::nested::adds_negatives', 'src/lib.rs tests::subtracts', 'tests/other.rs tests::adds'],
      skipped: ['src/lib.rs tests::divides', 'src/lib.rs tests::multiplies'],
      omitted: 0,
    });
  });

  // The feedback scanner's failing names carry a failure mark and, for some runners, less of
  // the name: the relation stated on TestStatuses holds on every runner's real output.
  it.each([
    ['jest-verbose.log', /^● (.+)$/, (name: string, failed: string) => failed.endsWith(` › ${name}`)],
    ['vitest-verbose.log', /^× (.+)$/, (name: string, failed: string) => failed === name],
    // node:test's feedback names its failing suites too: here they are part of a test's name.
    ['node-spec.log', /^✖ (.+)$/, (name: string, failed: string) => ` › ${failed} › `.includes(` › ${name} › `)],
    ['node-tap.log', /^not ok (.+)$/, (name: string, failed: string) => ` › ${failed} › `.includes(` › ${name} › `)],
    ['mocha-spec.log', /^\d+\) (.+)$/, (name: string, failed: string) => failed === name],
    ['pytest-rA-v.log', /^FAILED (\S+)/, (name: string, failed: string) => failed === name],
    ['go-test-v.log', /^--- FAIL: (.+)$/, (name: string, failed: string) => failed.endsWith(` ${name}`)],
    ['cargo-test.log', /^test (.+) \.\.\. FAILED$/, (name: string, failed: string) => failed.endsWith(` ${name}`)],
  ])('%s: each failing test the feedback names is a failed test here', (file, mark, matches) => {
    const { failed } = testStatuses(log(file));
    const scanner = new LogScanner();
    scanner.write(log(file));
    const named = scanner
      .end()
      .failingTests.map((name) => mark.exec(name)?.[1])
      .filter((name): name is string => name !== undefined);
    expect(named.length).toBeGreaterThan(0);
    for (const name of named) expect(failed.some((test) => matches(name, test))).toBe(true);
  });

  it('reads the same whether the output arrives whole or in pieces', () => {
    for (const name of ['jest-verbose.log', 'node-tap.log', 'go-test-v.log', 'mocha-spec.log']) {
      const text = log(name);
      const pieces = new TestStatusScanner();
      for (let i = 0; i < text.length; i += 7) pieces.write(text.slice(i, i + 7));
      expect(pieces.end()).toEqual(testStatuses(text));
    }
  });

  it('outputs of several runners in one step are all read', () => {
    const both = testStatuses(`${log('go-test-v.log')}\n${log('cargo-test.log')}`);
    expect(both.failed).toEqual(
      expect.arrayContaining(['example.com/fleet/other TestAdd', 'tests/other.rs tests::adds']),
    );
  });
});

describe('testStatuses of a real node --test run', () => {
  let dir: TempDir;
  beforeAll(async () => {
    dir = await createTempDir('verify-test-status');
    await writeFiles(dir.path, {
      'package.json': JSON.stringify({ type: 'module', scripts: { test: 'node --test' } }),
      'test/a.test.js': [
        "import { describe, it, test } from 'node:test';",
        "import assert from 'node:assert/strict';",
        "describe('suite', () => {",
        "  it('passes', () => assert.equal(1, 1));",
        "  it('fails', () => assert.equal(1, 2));",
        "  it.skip('is skipped', () => {});",
        "  describe('inner', () => { it('passes too', () => {}); });",
        '});',
        "test('top level', () => {});",
      ].join('\n'),
    });
  });
  afterAll(async () => {
    await dir.dispose();
  });

  const expected = {
    passed: ['suite › inner › passes too', 'suite › passes', 'top level'],
    failed: ['suite › fails'],
    skipped: ['suite › is skipped'],
    omitted: 0,
  };

  it('plans `npm test`, keeps it as the listing command, and reads every outcome from its streamed output', async () => {
    const plan = await planVerification(dir.path, { config: defaultVerification() });
    const step = plan.steps.find((s) => s.name === 'test')!;
    const command = listingTestCommand(step, plan);
    expect(command).toEqual(['npm', 'test']);
    const scanner = new TestStatusScanner();
    const outcome = await runVerification(dir.path, [{ name: 'test', command: command! }], {
      env: testEnv,
      timeoutMs: 60_000,
      onOutput: (_step, chunk) => scanner.write(chunk),
    });
    expect(outcome.failed?.exitCode).toBe(1);
    expect(sorted(scanner.end())).toEqual(expected);
  });

  it.each(['spec', 'tap'])('reads the %s reporter to the same names', async (reporter) => {
    let output = '';
    const command = [process.execPath, '--test', `--test-reporter=${reporter}`];
    expect(listingTestCommand({ command }, { toolchain: 'node' })).toEqual(command);
    await runVerification(dir.path, [{ name: 'test', command }], {
      env: testEnv,
      timeoutMs: 60_000,
      onOutput: (_step, chunk) => (output += chunk),
    });
    expect(output).toContain(reporter === 'tap' ? 'not ok 2 - fails' : '✖ fails');
    expect(sorted(testStatuses(output))).toEqual(expected);
  });
});

// Lines a real log is made of, so generated logs reach every kind of line and state.
const fixtureLines = [
  'jest-verbose.log',
  'node-spec.log',
  'node-tap.log',
  'mocha-spec.log',
  'pytest-rA-v.log',
  'go-test-v.log',
  'cargo-test.log',
  'vitest-verbose.log',
].flatMap((name) => log(name).split('\n'));

describe('testStatuses bounds', () => {
  it('for any output: lists are disjoint, names short and clean, pieces read as the whole', () => {
    const line = fc.oneof(fc.constantFrom(...fixtureLines), fc.string({ unit: 'binary', maxLength: 300 }));
    const text = fc.array(line, { maxLength: 300 }).map((lines) => lines.join('\n'));
    fc.assert(
      fc.property(text, fc.array(fc.nat(), { maxLength: 10 }), (output, cuts) => {
        const whole = testStatuses(output);
        const names = [...whole.passed, ...whole.failed, ...whole.skipped];
        expect(new Set(names).size).toBe(names.length);
        for (const name of names) expect(name.length).toBeLessThanOrEqual(500);
        const pieces = new TestStatusScanner();
        let at = 0;
        for (const cut of cuts.map((c) => c % (output.length + 1)).sort((a, b) => a - b)) {
          pieces.write(output.slice(at, cut));
          at = cut;
        }
        pieces.write(output.slice(at));
        expect(pieces.end()).toEqual(whole);
      }),
      { numRuns: 200 },
    );
  });

  it('keeps at most 50 000 names and counts the rest', () => {
    const lines = Array.from({ length: 60_000 }, (_, i) => `test case_${i} ... ok`);
    const { passed, omitted } = testStatuses(lines.join('\n'));
    expect(passed).toHaveLength(50_000);
    expect(passed.at(-1)).toBe('case_49999');
    expect(omitted).toBe(10_000);
  });

  // No clock assertions (a loaded machine is slow, not wrong): a reader that went quadratic
  // or backtracked would not finish these inputs before the test's timeout.
  it('reads a 50 MB output to bounded lists', () => {
    const run = log('jest-verbose.log') + log('node-tap.log') + log('pytest-rA-v.log') + log('go-test-v.log');
    const big = run.repeat(Math.ceil(50e6 / run.length));
    const { passed, failed, skipped, omitted } = testStatuses(big);
    expect(passed.length + failed.length + skipped.length).toBeLessThan(100);
    expect(omitted).toBe(0);
    expect(testStatuses('x'.repeat(50e6)).passed).toEqual([]);
  });

  it('stays linear on lines built to make its patterns backtrack, and on deep trees of long titles', () => {
    const hostile = [
      `${'a::'.repeat(600)}x PASSED ${' ('.repeat(300)}`,
      `PASSED a.py::t[${' - ['.repeat(400)}`,
      `test ${' ...'.repeat(500)} ok`,
      `✔ x${' (1ms)'.repeat(300)} #`,
      `ok 1 - ${'# '.repeat(900)}`,
      `    --- PASS: ${'T '.repeat(900)}(0.00s)`,
      `${' '.repeat(1990)}- x`,
    ];
    const text = Array.from({ length: 20_000 }, (_, i) => hostile[i % hostile.length]).join('\n');
    expect(testStatuses(text).omitted).toBe(0);
    // 64 nested suites of 500-character titles, then many tests inside them: each name is
    // cut to 500 characters, keeping its start and its own title.
    const suites = Array.from({ length: 64 }, (_, depth) => `${'  '.repeat(depth)}▶ ${'s'.repeat(500)}`);
    const tests = Array.from({ length: 20_000 }, (_, i) => `${'  '.repeat(64)}✔ t${i} (1ms)`);
    const { passed } = testStatuses([...suites, ...tests].join('\n'));
    expect(passed).toHaveLength(20_000);
    expect(passed[7]).toMatch(/^s{200}…s+ › t7$/);
    for (const name of passed) expect(name.length).toBe(500);
  });
});
