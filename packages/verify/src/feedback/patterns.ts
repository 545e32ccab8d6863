import type { TestOutcome } from '../types.js';

// Line patterns of the test runners and compilers whose output the scanner understands.
// Each is anchored or cheap to retry and has no nested or overlapping quantifiers, so
// matching a (capped) line costs time linear in its length: a 50 MB log scans in linear time.

/** Escape sequences for colour and cursor movement, which CI logs often keep. */
// eslint-disable-next-line no-control-regex -- matching the ESC control character is the point
const ansi = /\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g;

/** Drops colour codes and carriage-return progress output, keeping what a terminal would show last. */
export function cleanLine(line: string): string {
  let out = line.endsWith('\r') ? line.slice(0, -1) : line;
  const cr = out.lastIndexOf('\r');
  if (cr !== -1) out = out.slice(cr + 1);
  return out.includes('\x1b') ? out.replace(ansi, '') : out;
}

// A duration printed after a test name: "(5 ms)", "(1.2ms)", "(0.00s)", "(5.2 s)", or
// vitest's bare "10156ms" (a test that timed out differs in it from run to run). One space,
// not `\s+`: an unanchored `\s+` re-scans a run of spaces from every position in it.
const timing = / (?:\(\d+(?:\.\d+)? ?m?s\)|\d+(?:\.\d+)?ms)$/;
/** A test name as printed, trimmed and without the duration after it (which differs from run to run). */
export const withoutTiming = (name: string): string => name.trim().replace(timing, '').trim();

// Something every failing-test pattern below contains.
const maybeTest = /[●✕✖×]|not ok|FAIL|ERROR/;
const jestHeader = /^\s*● (.+)$/;
const failFile = /^\s*FAIL\s+(\S.*)$/;
const unittestFail = /^(?:FAIL|ERROR): \S/;
/**
 * Names of lines that look like a failing test but are summaries: eslint's "✖ 3 problems (…)",
 * node:test's "✖ failing tests:", jest's console and suite-level blocks.
 */
export const notATest = /^(?:\d+ problems? \(|failing tests:$|Console$|Test suite failed to run$)/;

/**
 * The failing test named by `line`, normalised (trimmed, timing removed), or undefined.
 * Recognises jest (`●`, `✕`, `FAIL file`), vitest (`×`), node:test (`✖`, TAP `not ok`),
 * go (`--- FAIL:`, `FAIL pkg`), pytest (`FAILED a.py::t`), unittest (`FAIL: t`) and cargo (`test t ... FAILED`).
 */
export function failingTestName(line: string): string | undefined {
  // One cheap test first: almost every line of a long log names no failure.
  if (!maybeTest.test(line)) return undefined;
  const header = jestHeader.exec(line)?.[1];
  const tree = header === undefined ? treeLine(line) : undefined;
  if (header !== undefined || (tree !== undefined && failMarks.includes(tree.mark))) {
    const name = withoutTiming(header ?? tree?.text ?? '');
    return notATest.test(name) ? undefined : line.trimStart().slice(0, 2) + name;
  }
  const tap = tapResult(line);
  if (tap !== undefined) return tap.outcome === 'failed' ? `not ok ${tap.text.trim()}` : undefined;
  const go = goResult(line);
  if (go !== undefined) return go.outcome === 'failed' ? `--- FAIL: ${go.name}` : undefined;
  const file = failFile.exec(line)?.[1];
  if (file !== undefined) return `FAIL ${withoutTiming(file)}`;
  if (unittestFail.test(line)) return line.trim();
  const pytest = pytestResult(line);
  if (pytest?.outcome === 'failed') return pytest.form === 'summary' ? line.trim() : `FAILED ${pytest.id}`;
  const cargo = cargoResult(line);
  return cargo?.outcome === 'failed' ? `test ${cargo.name} ... FAILED` : undefined;
}

// Lines that report one test's outcome: what `failingTestName` reads the failures from and
// per-test statuses (test-status.ts) read every outcome from.

/** One line of a runner's result tree: its indent, its mark and the text after it. */
export interface TreeLine {
  indent: number;
  /** jest `✓ ✕ ○ ✎`, vitest `✓ × ↓ □`, node:test spec `✔ ✖ ﹣`, mocha `✔`. */
  mark: string;
  text: string;
}
const treeMarked = /^(\s*)([✓✔✕✖×○✎﹣↓□]) (.+)$/;
/** The marks of a failed test: jest `✕`, node:test `✖`, vitest `×`. */
const failMarks = '✕✖×';

/** The result-tree line `line` is, or undefined. */
export function treeLine(line: string): TreeLine | undefined {
  const match = treeMarked.exec(line);
  if (match?.[1] === undefined || match[2] === undefined || match[3] === undefined) return undefined;
  return { indent: match[1].length, mark: match[2], text: match[3] };
}

/** A node:test spec suite or test with subtests, printed before them: `▶ name`. */
export const nodeSuite = /^(\s*)▶ (.+)$/;
/** A mocha pending test in the result tree: `  - name`. */
export const mochaPending = /^(\s+)- (\S.*)$/;
/** Mocha's "5 passing (70ms)": printed once the result tree is complete. */
export const mochaPassingSummary = /^\s*\d+ passing\b/;
/** A jest file header, `PASS  test/a.test.js (5.2 s)`: not vitest's `FAIL  file > test`, nor go's tab-separated line. */
const jestFileLine = /^\s*(?:PASS|FAIL) +(\S.*)$/;

/** The test file a jest `PASS`/`FAIL` header names, or undefined. */
export function jestFileHeader(line: string): string | undefined {
  const file = jestFileLine.exec(line)?.[1];
  return file === undefined || file.includes(' > ') ? undefined : withoutTiming(file);
}

/** A test outcome line: the outcome and the test's name as printed (without its duration). */
export interface OutcomeLine {
  outcome: TestOutcome;
  name: string;
}

const tapLine = /^(\s*)(not ok|ok) \d+(?: -)? (.+)$/;
const tapDirective = /#\s*(SKIP|TODO)\b/i;
/** A TAP `# Subtest: name` comment, which node:test prints before each test. */
export const tapSubtest = /^(\s*)# Subtest: (.+)$/;

/**
 * A TAP result, `ok 1 - name` or `not ok 2 - name # SKIP why`: its indent (nesting), its
 * outcome (a SKIP or TODO directive makes it `skipped`), `text` as printed after the number
 * and `name` without the directive.
 */
export function tapResult(line: string): (OutcomeLine & { indent: number; text: string }) | undefined {
  const match = tapLine.exec(line);
  if (match?.[1] === undefined || match[3] === undefined) return undefined;
  const text = match[3];
  const directive = tapDirective.exec(text);
  const outcome = directive !== null ? 'skipped' : match[2] === 'ok' ? 'passed' : 'failed';
  return { indent: match[1].length, outcome, text, name: (directive ? text.slice(0, directive.index) : text).trim() };
}

const goLine = /^\s*--- (PASS|FAIL|SKIP): (\S.*)$/;
const goOutcomes = { PASS: 'passed', FAIL: 'failed', SKIP: 'skipped' } as const;
// `ok  \texample.com/calc\t0.01s`, `FAIL\texample.com/calc\t0.01s`: after a package's tests.
const goPackageLine = /^(?:ok {2}|FAIL)\t(\S+)/;

/** A go test result, `--- FAIL: TestSub/negative (0.00s)`; subtests keep their `Parent/sub` name. */
export function goResult(line: string): OutcomeLine | undefined {
  const match = goLine.exec(line);
  if (match?.[2] === undefined) return undefined;
  return { outcome: goOutcomes[match[1] as keyof typeof goOutcomes], name: withoutTiming(match[2]) };
}

/** The package a go `ok`/`FAIL` line closes, or undefined. */
export function goPackage(line: string): string | undefined {
  return goPackageLine.exec(line)?.[1];
}

/**
 * A cargo (libtest) result, `test tests::adds ... ok`, `... FAILED`, `... ignored[, why]`.
 * Split by hand at the first ` ... `: a pattern around a free-form name would backtrack.
 */
export function cargoResult(line: string): OutcomeLine | undefined {
  if (!line.startsWith('test ')) return undefined;
  const at = line.indexOf(' ... ', 5);
  if (at <= 5) return undefined;
  const rest = line.slice(at + 5);
  const outcome =
    rest === 'ok' ? 'passed' : rest === 'FAILED' ? 'failed' : /^ignored(?:$|, )/.test(rest) ? 'skipped' : undefined;
  return outcome === undefined ? undefined : { outcome, name: line.slice(5, at) };
}

// `     Running unittests src/lib.rs (target/debug/deps/calc-1a2b…)`, older cargo
// `     Running target/debug/deps/calc-1a2b…`; `   Doc-tests calc`.
const cargoRunning = /^\s+Running (?:unittests )?(\S+)/;
const cargoDocTests = /^\s+Doc-tests \S/;
const buildHash = /-[0-9a-f]{16}$/;

/**
 * The test target a cargo line starts: its source file (`src/lib.rs`, `tests/api.rs`), the
 * binary without its build hash on older cargo, `''` for doc-tests (whose names hold their
 * file already); undefined for any other line.
 */
export function cargoTarget(line: string): string | undefined {
  const running = cargoRunning.exec(line)?.[1];
  if (running !== undefined) return running.replace(buildHash, '');
  return cargoDocTests.test(line) ? '' : undefined;
}

const pytestOutcomes = {
  PASSED: 'passed',
  XPASS: 'passed',
  FAILED: 'failed',
  ERROR: 'failed',
  SKIPPED: 'skipped',
  // An expected failure is no verdict on the code under test.
  XFAIL: 'skipped',
} as const;
type PytestWord = keyof typeof pytestOutcomes;
// `-rA` short summary: `FAILED tests/a.py::test_b - assert 1 == 2` (skips show a location, no id).
const pytestSummaryLine = /^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S.*)$/;
// `-v`: `tests/a.py::test_b[x y] PASSED   [ 50%]`, `… SKIPPED (why)   [ 60%]`.
const pytestVerboseWord = / (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b/;
const pytestVerboseTail = /^(?: \(.*\))?\s*(?:\[ *\d{1,3}%\])?$/;
// pytest-xdist's `-v`: `[gw0] [ 50%] PASSED tests/a.py::test_b`.
const xdistPrefix = /^\[gw\d+\] \[ *\d{1,3}%\] /;

/** A pytest result with its node id (`tests/a.py::Class::test[param]`), from `-rA` or `-v` output. */
export function pytestResult(
  line: string,
): { outcome: TestOutcome; id: string; form: 'summary' | 'verbose' } | undefined {
  if (!line.includes('::')) return undefined;
  const text = line.startsWith('[gw') ? line.replace(xdistPrefix, '') : line;
  const summary = pytestSummaryLine.exec(text);
  if (summary?.[2] !== undefined) {
    const id = pytestId(summary[2]);
    return isNodeId(id) ? { outcome: pytestOutcomes[summary[1] as PytestWord], id, form: 'summary' } : undefined;
  }
  const verbose = pytestVerboseWord.exec(text);
  if (verbose?.[1] === undefined) return undefined;
  const id = text.slice(0, verbose.index);
  if (!isNodeId(id) || !pytestVerboseTail.test(text.slice(verbose.index + verbose[0].length))) return undefined;
  return { outcome: pytestOutcomes[verbose[1] as PytestWord], id, form: 'verbose' };
}

// A node id starts with a file path, which has no spaces (a parameter id may have some).
function isNodeId(id: string): boolean {
  const sep = id.indexOf('::');
  return sep > 0 && !/\s/.test(id.slice(0, sep));
}

/** The node id at the start of a summary line's rest: it ends at ` - ` (a parameter id may hold one). */
function pytestId(rest: string): string {
  const dash = rest.indexOf(' - ');
  if (dash === -1) return rest;
  const bracket = rest.indexOf('[');
  if (bracket === -1 || bracket > dash) return rest.slice(0, dash);
  const close = rest.indexOf('] - ', bracket);
  return close === -1 ? rest : rest.slice(0, close + 1);
}

/** The jest failure header (`● Suite › test`), except console output blocks; the name, or undefined. */
export function jestFailureHeader(line: string): string | undefined {
  const name = jestHeader.exec(line)?.[1];
  return name === undefined || name.startsWith('Console') ? undefined : name;
}

/** The test a jest failure header names (`● Suite › test`); undefined for console output and a suite that failed to run. */
export function jestFailedTest(line: string): string | undefined {
  const name = jestFailureHeader(line);
  return name === undefined || notATest.test(name) ? undefined : withoutTiming(name);
}

/** Mocha's "3 failing" line, after which the numbered failure details follow. */
export const mochaFailingSummary = /^\s*\d+ failing\b/;
/**
 * Mochas's numbered failure: in the result tree the failing test (`    2) adds`), after the
 * "N failing" line its title (`  1) Suite`), possibly continued on the next lines.
 */
export const mochaFailureTitle = /^(\s*)\d+\) (\S.*)$/;

/** How a recognised error block continues after its first line. */
export type BlockKind =
  /** Indented lines continue it (tsc, gcc-style and go diagnostics). */
  | 'indented'
  /** Every non-blank line continues it (rustc, a rust panic, a node code frame). */
  | 'until-blank';

// Something every error-start pattern below contains: `file:12`, `(12,5): error`, `error`.
const maybeError = /:\d|\): error|^error|^thread /;
const tscParen = /^\S[^()]*\(\d+,\d+\): error TS\d+/;
const tscPretty = /^\s*\S+:\d+:\d+ - error TS\d+/;
const rustError = /^error(?:\[E\d+\])?: (?!could not compile|aborting due to|test failed)/;
const rustPanic = /^thread '[^']*' (?:\(\d+\) )?panicked at /;
// path/to/file.ext:line[:col][:] message — path chars only, no spaces, a short extension.
const diagnostic = /^\s{0,12}(?:\/|\.{1,2}\/)?[\w@~+-][\w@~+./-]*\.[A-Za-z]\w{0,7}:\d+(?::\d+)?:? +(\S.*)$/;
const notAnError = /^(?:warning|note|info|hint|help)\b/i;
// Node prints `file.js:12` alone above the code frame of a SyntaxError or uncaught throw.
const nodeFrame = /^(?:\/|\.{1,2}\/)?[\w@~+./-]+\.[cm]?[jt]sx?:\d+$/;

/** The kind of error block `line` starts, or undefined when it starts none. */
export function errorBlockStart(line: string): BlockKind | undefined {
  if (!maybeError.test(line)) return undefined;
  if (tscParen.test(line) || tscPretty.test(line)) return 'indented';
  if (rustError.test(line) || rustPanic.test(line) || nodeFrame.test(line)) return 'until-blank';
  const message = diagnostic.exec(line)?.[1];
  if (message !== undefined && !notAnError.test(message)) return 'indented';
  return undefined;
}

/** Where an `until-blank` block ends early: a rust backtrace or note after the panic message. */
export const untilBlankStop = /^(?:stack backtrace:|note: )/;

/** A pytest failure section header: `____ TestThing.test_fails ____`. */
export const pytestSection = /^_{3,} (.+?) _{3,}$/;
/** Inside a pytest section, the lines worth keeping: the failing source line, `E` lines, the location. */
export const pytestKeep = /^(?:> |E )|^\S+:\d+: \w/;
/** A pytest separator line (`==== short test summary info ====`) that ends a section. */
export const pytestSeparator = /^={3,}/;

/** A node:test failure, spec (`✖ name`) or TAP (`not ok 1 - name`): its details are nested under it. */
export const nodeTestFailure = /^\s*(?:✖ |not ok \d)/;
/** TAP/YAML and error-object keys that say nothing about the failure. */
export const tapNoise = /^\s*(?:---|\.\.\.)$|^\s*(?:duration_ms|type|failureType|code|name|generatedMessage):/;
/** The TAP key after which node:test prints the stack: the rest of the block is skipped. */
export const tapStack = /^\s*stack: /;

/** A stack frame line (`    at fn (file.js:1:2)`). */
export const stackFrame = /^\s+at /;
/** A frame inside the runtime rather than the project: never worth the agent's bytes. */
export const runtimeFrame = /\(?node:|\(<anonymous>\)/;

/** An eslint (stylish formatter) problem line: `  12:5  error  message  rule`. */
export const eslintProblem = /^\s+\d+:\d+\s+(error|warning)\s/;
/** A line that is only a file path: eslint's header above that file's problems. */
export const pathOnly = /^(?:\/|\.{1,2}\/|[\w@.-]+\/)[^\s]*\.\w+$/;
