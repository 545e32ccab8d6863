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
const withoutTiming = (name: string): string => name.trim().replace(timing, '').trim();

// Something every failing-test pattern below contains.
const maybeTest = /[●✕✖×]|not ok|FAIL|ERROR/;
const jestHeader = /^\s*● (.+)$/;
const bulletName = /^\s*[✕✖×] (.+)$/;
const tapNotOk = /^\s*not ok \d+(?: -)? (.+)$/;
const tapDirective = /#\s*(?:SKIP|TODO)\b/i;
const goFail = /^\s*--- FAIL: (\S.*)$/;
const failFile = /^\s*FAIL\s+(\S.*)$/;
const pytestSummary = /^(?:FAILED|ERROR) \S+::\S/;
const pytestOutcome = /^(?:FAILED|ERROR)\b/;
const cargoFail = /^test (\S+) \.\.\. FAILED$/;
const unittestFail = /^(?:FAIL|ERROR): \S/;
// Lines that look like a failing test but are summaries: eslint's "✖ 3 problems (…)",
// node:test's "✖ failing tests:", jest's console and suite-level blocks.
const notATest = /^(?:\d+ problems? \(|failing tests:$|Console$|Test suite failed to run$)/;

/**
 * The failing test named by `line`, normalised (trimmed, timing removed), or undefined.
 * Recognises jest (`●`, `✕`, `FAIL file`), vitest (`×`), node:test (`✖`, TAP `not ok`),
 * go (`--- FAIL:`, `FAIL pkg`), pytest (`FAILED a.py::t`), unittest (`FAIL: t`) and cargo (`test t ... FAILED`).
 */
export function failingTestName(line: string): string | undefined {
  // One cheap test first: almost every line of a long log names no failure.
  if (!maybeTest.test(line)) return undefined;
  let match = jestHeader.exec(line) ?? bulletName.exec(line);
  if (match?.[1] !== undefined) {
    const name = withoutTiming(match[1]);
    return notATest.test(name) ? undefined : line.trimStart().slice(0, 2) + name;
  }
  match = tapNotOk.exec(line);
  if (match?.[1] !== undefined) return tapDirective.test(match[1]) ? undefined : `not ok ${match[1].trim()}`;
  match = goFail.exec(line);
  if (match?.[1] !== undefined) return `--- FAIL: ${withoutTiming(match[1])}`;
  match = failFile.exec(line);
  if (match?.[1] !== undefined) return `FAIL ${withoutTiming(match[1])}`;
  if (pytestSummary.test(line) || unittestFail.test(line)) return line.trim();
  // pytest -v: `tests/a.py::test_b FAILED`. Split by hand: `\S+::\S+ ` backtracks quadratically.
  const space = line.indexOf(' ');
  if (space > 0 && line.slice(0, space).includes('::') && pytestOutcome.test(line.slice(space + 1))) {
    return `FAILED ${line.slice(0, space)}`;
  }
  match = cargoFail.exec(line);
  if (match?.[1] !== undefined) return `test ${match[1]} ... FAILED`;
  return undefined;
}

/** The jest failure header (`● Suite › test`), except console output blocks; the name, or undefined. */
export function jestFailureHeader(line: string): string | undefined {
  const name = jestHeader.exec(line)?.[1];
  return name === undefined || name.startsWith('Console') ? undefined : name;
}

/** Mocha's "3 failing" line, after which the numbered failure details follow. */
export const mochaFailingSummary = /^\s*\d+ failing\b/;
/** Mocha's numbered failure title (`  1) Suite`), possibly continued on the next lines. */
export const mochaFailureTitle = /^\s*\d+\) \S/;

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
