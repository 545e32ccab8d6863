import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import {
  extractFeedback,
  feedbackFor,
  fitFeedback,
  LogScanner,
  runVerification,
  type StepResult,
} from '../src/index.js';
import { fixture, nodeScript, testEnv } from './helpers.js';

const log = (name: string) => readFileSync(fixture(name), 'utf8');
const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/** Splits rendered feedback into its sections. */
function sections(feedback: string): { tests: string[]; errors: string[]; tail: string[] } {
  const out = { tests: [] as string[], errors: [] as string[], tail: [] as string[] };
  let current: string[] | undefined;
  for (const line of feedback.split('\n')) {
    if (/^Failing tests \(\d+\):$/.test(line)) current = out.tests;
    else if (/^First errors?:$/.test(line)) current = out.errors;
    else if (line === 'Output (last lines):') current = out.tail;
    else current?.push(line);
  }
  return out;
}

/** A jest run of `total` tests, `failing` of them failing, with console noise: realistic and long. */
function jestLog(total: number, failing: number): { text: string; names: string[] } {
  const names: string[] = [];
  const every = Math.floor(total / failing);
  const lines = ['> app@1.0.0 test', '> jest --verbose', '', ' FAIL  test/orders.test.ts', '  orders'];
  for (let i = 0; i < total; i += 1) {
    const name = `computes the total of order #${i} with discounts`;
    if (i % every === 3 && names.length < failing) {
      names.push(`● orders › ${name}`);
      lines.push(`    ✕ ${name} (${i % 17} ms)`);
    } else lines.push(`    ✓ ${name} (${i % 13} ms)`);
    if (i % 50 === 0)
      lines.push(
        '  console.log',
        `    fetching order ${i} from the fake store`,
        '      at log (src/store.ts:12:11)',
        '',
      );
  }
  for (const name of names) {
    lines.push(
      `  ${name}`,
      '',
      '    expect(received).toBe(expected) // Object.is equality',
      '',
      '    Expected: 120',
      '    Received: 100',
      '',
    );
    lines.push(
      '      40 |   const order = makeOrder();',
      '    > 41 |   expect(total(order)).toBe(120);',
      '         |                        ^',
      '',
    );
    lines.push(
      '      at Object.<anonymous> (test/orders.test.ts:41:24)',
      '      at processTicksAndRejections (node:internal/process/task_queues:95:5)',
      '',
    );
  }
  lines.push(`Tests:       ${failing} failed, ${total - failing} passed, ${total} total`, 'Ran all test suites.');
  return { text: lines.join('\n'), names };
}

describe('extractFeedback on real tool output', () => {
  it('jest: failing test names, then the first assertion with its code frame and location', () => {
    const feedback = extractFeedback(log('jest.log'));
    const { tests, errors } = sections(feedback);
    expect(tests).toEqual([
      'FAIL ./math.test.js',
      '● math › adds',
      '● math › nested › adds big numbers',
      'FAIL ./other.test.js',
      '● other fails',
    ]);
    expect(errors[0]).toBe('● math › adds');
    expect(errors).toContain('    Received: -1');
    expect(errors).toContain('      at Object.toBe (math.test.js:3:42)');
    expect(errors.join('\n')).not.toContain('● Console');
  });

  it('jest --verbose: a test listed as ✕ and again under ● is named once', () => {
    expect(sections(extractFeedback(log('jest-verbose.log'))).tests).toEqual([
      'FAIL ./math.test.js',
      '● math › adds',
      '● math › nested › adds big numbers',
    ]);
  });

  it('jest with a TypeScript compile error: the error lines with file:line', () => {
    const { errors } = sections(extractFeedback(log('jest-suite-failed.log')));
    expect(errors[0]).toBe('● Test suite failed to run');
    expect(errors[1]).toBe('    test/plan.test.ts:202:3 - error TS1128: Declaration or statement expected.');
  });

  it('tsc: every error whole, colour codes removed', () => {
    const plain = sections(extractFeedback(log('tsc.log'))).errors;
    expect(plain).toEqual([
      "a.ts(1,64): error TS2304: Cannot find name 'c'.",
      "a.ts(2,7): error TS2322: Type 'number' is not assignable to type 'string'.",
      "a.ts(3,48): error TS2339: Property 'b' does not exist on type '{ a: number; }'.",
    ]);
    const pretty = extractFeedback(log('tsc-pretty.log'));
    expect(pretty).not.toContain('\x1b');
    expect(sections(pretty).errors[0]).toBe("a.ts:1:64 - error TS2304: Cannot find name 'c'.");
  });

  it('eslint: the file, then its errors (warnings left out)', () => {
    const { errors } = sections(extractFeedback(log('eslint.log')));
    expect(errors[0]).toBe('/repo/b.js');
    expect(errors.slice(1)).toHaveLength(5);
    expect(errors[1]).toMatch(/^ {2}1:7 +error +'unused' is assigned a value but never used +no-unused-vars$/);
    expect(errors.join('\n')).not.toContain('warning');
  });

  it('pytest: FAILED names, then each failure: the source line, E lines and location', () => {
    const { tests, errors } = sections(extractFeedback(log('pytest.log')));
    expect(tests).toEqual([
      'FAILED test_calc.py::test_add - assert -1 == 3',
      'FAILED test_calc.py::TestThing::test_fails - assert 1 == 2',
      'FAILED test_calc.py::test_raises - ValueError: boom',
    ]);
    expect(errors.slice(0, 5)).toEqual([
      expect.stringMatching(/^_+ test_add _+$/),
      '>       assert add(1, 2) == 3',
      'E       assert -1 == 3',
      'E        +  where -1 = add(1, 2)',
      'test_calc.py:5: AssertionError',
    ]);
  });

  it('go test and go build: --- FAIL names and ./file.go:line:col errors', () => {
    const test = sections(extractFeedback(log('go-test.log')));
    expect(test.tests).toEqual([
      '--- FAIL: TestAdd',
      '--- FAIL: TestSub',
      '--- FAIL: TestSub/negative',
      'FAIL example.com/calc\t0.002s',
    ]);
    expect(test.errors).toEqual(['    calc_test.go:8: Add(1, 2) = -1; want 3', '    calc_test.go:20: got 1, want -1']);
    expect(sections(extractFeedback(log('go-build.log'))).errors).toEqual([
      './calc.go:3:9: undefined: c',
      './calc.go:5:2: declared and not used: x',
    ]);
  });

  it('cargo: rustc errors with their --> location; failing tests and their panics', () => {
    const build = sections(extractFeedback(log('cargo-build.log')));
    expect(build.errors.slice(0, 2)).toEqual([
      'error[E0425]: cannot find value `c` in this scope',
      ' --> src/main.rs:1:37',
    ]);
    expect(build.errors).not.toContain(expect.stringContaining('could not compile'));
    const test = sections(extractFeedback(log('cargo-test.log')));
    expect(test.tests).toEqual(['test tests::it_subtracts ... FAILED', 'test tests::it_adds ... FAILED']);
    expect(test.errors).toContain("thread 'tests::it_adds' (26301) panicked at src/main.rs:7:20:");
    expect(test.errors).not.toContain('stack backtrace:');
  });

  it('mocha and node:test (spec and TAP): names and assertion details', () => {
    expect(sections(extractFeedback(log('mocha.log'))).tests).toEqual([
      '1) Array #indexOf() should return the index when present',
      '2) Parser parses dates',
    ]);
    const spec = sections(extractFeedback(log('node-spec.log')));
    expect(spec.tests).toEqual(['✖ parses numbers', '✖ parser', '✖ top level fails']);
    expect(spec.errors).toContain('    2 !== 3');
    const tap = sections(extractFeedback(log('node-tap.log')));
    expect(tap.tests).toEqual(['not ok parses numbers', 'not ok parser', 'not ok top level fails']);
    expect(tap.errors).toContain("      location: '/repo/t.test.mjs:4:3'");
    expect(tap.errors.join('\n')).not.toContain('node:internal');
  });

  it('an unrecognised log gives its last lines', () => {
    const feedback = extractFeedback(
      ['starting', 'doing things', 'something odd happened', 'exiting with 3'].join('\n'),
    );
    expect(feedback).toBe('Output (last lines):\nstarting\ndoing things\nsomething odd happened\nexiting with 3');
    expect(extractFeedback('')).toBe('');
  });
});

describe('extractFeedback bounds', () => {
  it('from a 10 000-line failing log: ≤ 4 KB and every failing test name', () => {
    const { text, names } = jestLog(10_000, 25);
    expect(text.split('\n').length).toBeGreaterThan(10_000);
    const feedback = extractFeedback(text);
    expect(bytes(feedback)).toBeLessThanOrEqual(4096);
    expect(sections(feedback).tests).toEqual(['FAIL test/orders.test.ts', ...names]);
    expect(feedback).toContain('    Received: 100');
    expect(feedback).toContain('      at Object.<anonymous> (test/orders.test.ts:41:24)');
  });

  it('keeps as many names as fit when they alone exceed the budget, and says how many are left', () => {
    const { text, names } = jestLog(2_000, 200);
    const feedback = extractFeedback(text, 2048);
    expect(bytes(feedback)).toBeLessThanOrEqual(2048);
    const { tests } = sections(feedback);
    const shown = tests.filter((line) => line.startsWith('●'));
    expect(shown.length).toBeGreaterThan(20);
    expect(shown).toEqual(names.slice(0, shown.length));
    expect(tests.at(-1)).toBe(`…[${200 - shown.length} more failing tests not shown]`);
  });

  it('never cuts the first error in half: whole lines, then a marker', () => {
    const block = [
      'error[E0308]: mismatched types',
      ' --> src/lib.rs:10:5',
      ...Array.from(
        { length: 30 },
        (_, i) =>
          `${String(i).padStart(2)} |     let value: String = compute_something_long_${i}(argument_a, argument_b);`,
      ),
    ];
    const feedback = extractFeedback(
      `   Compiling app\n${block.join('\n')}\n\nerror: could not compile \`app\`\n`,
      1024,
    );
    expect(bytes(feedback)).toBeLessThanOrEqual(1024);
    const { errors } = sections(feedback);
    expect(errors.at(-1)).toMatch(/^…\[error truncated: \d+ more lines\]$/);
    expect(errors.slice(0, -1)).toEqual(block.slice(0, errors.length - 1));
  });

  it('a first error line longer than the budget is cut at a character boundary, marked', () => {
    const line = `src/generated.ts(1,1): error TS1005: ${'ünïcödé '.repeat(300)}`;
    const feedback = extractFeedback(line, 500);
    expect(bytes(feedback)).toBeLessThanOrEqual(500);
    expect(feedback).toMatch(
      /^First error:\nsrc\/generated\.ts\(1,1\): error TS1005: [ünïcödé ]+ …\[cut\]\n…\[error truncated\]$/,
    );
    expect(feedback).not.toContain('\uFFFD');
  });

  // No clock assertions (a loaded machine is slow, not wrong): a scan that went quadratic or
  // backtracked would not finish these inputs before the test's generous timeout.
  it('a 50 MB log is scanned to bounded feedback', () => {
    const { text } = jestLog(2_000, 5);
    const big = `${text}\n`.repeat(Math.ceil(50e6 / text.length));
    expect(bytes(extractFeedback(big))).toBeLessThanOrEqual(4096);
    expect(bytes(extractFeedback('x'.repeat(50e6)))).toBeLessThanOrEqual(4096);
  });

  it('stays linear on lines built to make regular expressions backtrack', () => {
    const hostile = [
      `ERROR ${'a::'.repeat(700)}`,
      `${'a::'.repeat(700)}x FAILED ERROR`,
      `● x${' '.repeat(1990)}x`,
      `src/${'a.'.repeat(990)}ts:1`,
      `FAIL ${'1:'.repeat(990)}`,
      `___ ${'___ a '.repeat(300)}`,
      `${'\x1b]'.repeat(600)}`,
    ];
    const text = Array.from({ length: 5_000 }, (_, i) => hostile[i % hostile.length]).join('\n');
    expect(bytes(extractFeedback(text))).toBeLessThanOrEqual(4096);
  });

  it('the scanner gives the same findings whether the log arrives whole or in pieces', () => {
    const { text } = jestLog(500, 10);
    const whole = new LogScanner();
    whole.write(text);
    const pieces = new LogScanner();
    for (let i = 0; i < text.length; i += 7) pieces.write(text.slice(i, i + 7));
    expect(pieces.end()).toEqual(whole.end());
  });
});

describe('feedbackFor', () => {
  let dir: TempDir;
  beforeAll(async () => {
    dir = await createTempDir('verify-feedback');
  });
  afterAll(async () => {
    await dir.dispose();
  });

  it('leads with the step and command, and stays within maxBytes', () => {
    const failed: StepResult = {
      name: 'build',
      command: ['npx', 'tsc', '-p', '.'],
      exitCode: 2,
      signal: null,
      timedOut: false,
      durationMs: 900,
      outputTail: log('tsc.log'),
      passed: false,
    };
    const feedback = feedbackFor(failed, 300);
    expect(feedback.split('\n')[0]).toBe('Step build failed (exit 2): npx tsc -p .');
    expect(feedback).toContain("a.ts(1,64): error TS2304: Cannot find name 'c'.");
    expect(bytes(feedback)).toBeLessThanOrEqual(300);
    expect(bytes(feedbackFor(failed, 10))).toBeLessThanOrEqual(10);
  });

  it('names failures that scrolled out of the kept output tail (findings cover the whole output)', async () => {
    const { text, names } = jestLog(10_000, 25);
    // The failure names come first, then thousands of lines: far more than the 8 KB tail.
    // exitCode, not exit(): exit() may drop what is still queued for the pipe.
    const script = `process.stdout.write(require('fs').readFileSync('log.txt', 'utf8')); process.exitCode = 1`;
    await writeFile(join(dir.path, 'log.txt'), text);
    const outcome = await runVerification(dir.path, [{ name: 'test', command: nodeScript(script) }], {
      env: testEnv,
      timeoutMs: 20_000,
    });
    const failed = outcome.failed!;
    expect(bytes(failed.outputTail)).toBeLessThan(9_000);
    expect(failed.outputTail).not.toContain(names[0]!.slice(2));
    const feedback = feedbackFor(failed);
    expect(bytes(feedback)).toBeLessThanOrEqual(4096);
    expect(feedback.split('\n')[0]).toMatch(/^Step test failed \(exit 1\): /);
    expect(sections(feedback).tests).toEqual(['FAIL test/orders.test.ts', ...names]);
  });
});

describe('fitFeedback', () => {
  const failed = (output: string): StepResult => ({
    name: 'test',
    command: ['npm', 'test'],
    exitCode: 1,
    signal: null,
    timedOut: false,
    durationMs: 1,
    outputTail: output,
    passed: false,
  });

  it('keeps a notice before full feedback within the budget, cut at a line end, pairs whole', () => {
    const output = Array.from({ length: 400 }, (_, i) => `not ok ${i} - case ${i} 👍 went wrong`).join('\n');
    const full = feedbackFor(failed(output));
    expect(bytes(full)).toBeGreaterThan(4000);
    const notice = 'You changed nothing since the last attempt, so the same check still fails.\n\n';
    const fitted = fitFeedback([notice, full]);
    expect(bytes(fitted)).toBeLessThanOrEqual(4096);
    expect(fitted.startsWith(notice + 'Step test failed (exit 1): npm test')).toBe(true);
    expect(full.startsWith(fitted.slice(notice.length))).toBe(true);
    expect(fitted).not.toContain('\uFFFD');
    expect(fitted.slice(notice.length).endsWith('\n')).toBe(false);
  });

  it('gives a list after the feedback only the room left', () => {
    const full = feedbackFor(failed(Array.from({ length: 40 }, (_, i) => `error TS2322: line ${i}`).join('\n')));
    const list = `\n\nThese fail on the base commit too:\n${'- a test\n'.repeat(500)}`;
    const fitted = fitFeedback([full, list]);
    expect(bytes(fitted)).toBeLessThanOrEqual(4096);
    expect(bytes(full)).toBeLessThan(4000);
    // The feedback whole, then as much of the list as fits, in whole lines.
    expect(fitted.startsWith(full)).toBe(true);
    expect(fitted.slice(full.length)).toMatch(/^\n\nThese fail on the base commit too:\n(- a test\n)*- a test$/);
    expect(fitFeedback(['short', ' list'])).toBe('short list');
  });
});
