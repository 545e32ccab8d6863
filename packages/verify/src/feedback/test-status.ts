import { charSuffix, graphemePrefix, truncateHead } from '@codefleet/core';
import type { TestOutcome } from '../types.js';
import { LineReader } from './lines.js';
import { maxNameChars, Nesting } from './nesting.js';
import {
  cargoResult,
  cargoTarget,
  goPackage,
  goResult,
  jestFailedTest,
  jestFileHeader,
  mochaFailingSummary,
  mochaFailureTitle,
  mochaPassingSummary,
  mochaPending,
  nodeSuite,
  notATest,
  pytestResult,
  tapResult,
  tapSubtest,
  treeLine,
  withoutTiming,
  type TreeLine,
} from './patterns.js';

/**
 * Each test's outcome in one run of a test step, by the test's name. A name is what tells
 * one test from another across runs, from the runner's own output:
 * - jest (`--verbose`): `test/math.test.js › math › nested › adds` (file, describe blocks, title);
 * - vitest (`--reporter=verbose`): `test/math.test.js > math > nested > adds`, as vitest prints it;
 * - node:test (spec or TAP, the same name in both): `math › nested › adds` (suites, title);
 * - mocha (spec): `math nested adds`, mocha's own full title;
 * - pytest (`-rA` and/or `-v`): the node id, `tests/test_math.py::TestMath::test_adds[1-2]`;
 * - go (`-v`): `example.com/calc TestTable/negative`, the package and the (sub)test;
 * - cargo: `src/lib.rs tests::nested::adds`, the test target's source and the test path.
 * Only leaf tests count where a runner nests (a node:test suite, a TAP parent); go reports
 * parents and subtests alike, and both count. node:test and mocha print no file: the same
 * title path in two files is one name there.
 *
 * A failing test's name here is not the string `LogScanner` lists for the agent: that
 * one carries the failure mark (`● `, `× `, `FAILED `, `--- FAIL: `, `not ok `, `2) `), and a
 * name compared across runs where the outcome changes cannot. Stripped of its mark, the
 * scanner's name is this one for vitest and mocha; jest's lacks the file, node:test's the
 * suites (it names failing suites on their own too), go's the package, cargo's the target,
 * and pytest's ends with the error message.
 */
export interface TestStatuses {
  /**
   * Tests that passed, in order of first report. Each name is in one list only: a name
   * reported more than once (a title in two files where the runner prints no file; a pytest
   * test that passed, then failed its teardown) keeps its worst outcome, `failed` over
   * `skipped` over `passed`, so a name counts as passed only when every report of it did.
   */
  passed: string[];
  failed: string[];
  /** Skipped, ignored, pending and todo tests, and pytest's expected failures (`XFAIL`). */
  skipped: string[];
  /**
   * Reports of new names dropped because 50 000 were kept: when above 0, the lists are
   * incomplete. (A name past 500 characters is cut in the middle, kept whole otherwise.)
   */
  omitted: number;
}

// Bounds memory whatever the log: names are cut at maxNameChars, so at most ~25 M characters.
const maxTests = 50_000;
const worse: Record<TestOutcome, number> = { passed: 0, skipped: 1, failed: 2 };
const jestMarks: Readonly<Record<string, TestOutcome>> = {
  '✓': 'passed',
  '✕': 'failed',
  '○': 'skipped',
  '✎': 'skipped',
};
const vitestMarks: Readonly<Record<string, TestOutcome>> = {
  '✓': 'passed',
  '×': 'failed',
  '↓': 'skipped',
  '□': 'skipped',
};
const nodeMarks: Readonly<Record<string, TestOutcome>> = { '✔': 'passed', '✖': 'failed', '﹣': 'skipped' };
// jest prints `○ skipped name` and `✎ todo name`.
const jestStatusWord = /^(?:skipped|todo) /;
const jestSummary = /^Test Suites: /;
// node:test spec: `name (1.2ms)`, then ` # SKIP`, ` # TODO` or a skip message.
const nodeDuration = / \(\d+(?:\.\d+)?ms\)(?= # |$)/;
const nodeTodo = /^ # TODO\b/;

type Report = [name: string, outcome: TestOutcome];

/**
 * Reads a test step's output, in pieces as it arrives or whole, and records each test's
 * outcome for the runners listed on {@link TestStatuses}. Time is linear in the output and
 * memory bounded, as for `LogScanner`: lines are capped, names and their count too.
 * Output of several runners in one step (a script that runs two) is read as it comes.
 */
export class TestStatusScanner {
  private readonly reader = new LineReader((line) => this.line(line));
  private readonly tests = new Map<string, TestOutcome>();
  private omitted = 0;
  /** go prints a package's name after its tests: they wait here for it. */
  private goWaiting: Report[] = [];
  /** The cargo test target running now: its source file, '' for doc-tests. */
  private cargoTarget = '';
  private readonly tap = new Nesting();
  /** Groups of the jest, node:test spec or mocha result tree being read. */
  private readonly tree = new Nesting();
  /** The jest test file whose results are being printed, until the run's summary. */
  private jestFile: string | undefined;
  /** Inside that file's result tree, which ends at the first blank line. */
  private inJestTree = false;
  /** After node:test's "✖ failing tests:": the failures again, without their suites. */
  private inNodeRecap = false;
  /**
   * Mocha's results wait for its "N passing" line: its marks (`- name`, `1) name`) are too
   * plain to trust in output no mocha summary confirms.
   */
  private mochaWaiting: Report[] = [];
  /** After mocha's "N failing" line, numbered lines are failure details, not results. */
  private inMochaFailures = false;

  /** Feeds the next piece of output; pieces may split lines anywhere. */
  write(chunk: string): void {
    this.reader.write(chunk);
  }

  /** Ends the output and returns each test's outcome. */
  end(): TestStatuses {
    this.reader.end();
    // go tests whose package line never came (a run cut short) keep their bare names.
    for (const [name, outcome] of this.goWaiting.splice(0)) this.record(name, outcome);
    const statuses: TestStatuses = { passed: [], failed: [], skipped: [], omitted: this.omitted };
    for (const [name, outcome] of this.tests) statuses[outcome].push(name);
    return statuses;
  }

  private line(line: string): void {
    if (this.goLine(line) || this.cargoLine(line) || this.tapLine(line)) return;
    const pytest = pytestResult(line);
    if (pytest !== undefined) this.record(pytest.id, pytest.outcome);
    else if (!this.jestLine(line)) this.treeLine(line);
  }

  private goLine(line: string): boolean {
    const result = goResult(line);
    if (result !== undefined) this.wait(this.goWaiting, [result.name, result.outcome]);
    const pkg = result === undefined ? goPackage(line) : undefined;
    for (const [name, outcome] of pkg === undefined ? [] : this.goWaiting.splice(0)) {
      this.record(`${pkg} ${name}`, outcome);
    }
    return result !== undefined || pkg !== undefined;
  }

  private cargoLine(line: string): boolean {
    const target = cargoTarget(line);
    if (target !== undefined) this.cargoTarget = target;
    const result = target === undefined ? cargoResult(line) : undefined;
    if (result !== undefined)
      this.record(this.cargoTarget ? `${this.cargoTarget} ${result.name}` : result.name, result.outcome);
    return target !== undefined || result !== undefined;
  }

  /** node:test's TAP: `# Subtest: name` opens a test, `ok 1 - name` at the same indent closes it. */
  private tapLine(line: string): boolean {
    const subtest = tapSubtest.exec(line);
    if (subtest?.[1] !== undefined && subtest[2] !== undefined) {
      this.tap.open(subtest[1].length, subtest[2].trim(), true);
      return true;
    }
    const result = tapResult(line);
    if (result === undefined) return false;
    const groups = this.tap.result(result.indent, result.name);
    if (groups !== undefined) this.record([...groups, result.name].join(' › '), result.outcome);
    return true;
  }

  /** A jest file's results: its header, its tree of describe titles and results, its `●` failures. */
  private jestLine(line: string): boolean {
    const file = jestFileHeader(line);
    // A test file has an extension; a describe titled `PASS cases` does not start a file.
    if (file !== undefined && file.includes('.')) {
      this.jestFile = truncateHead(file, maxNameChars);
      this.inJestTree = true;
      this.tree.clear();
      return true;
    }
    if (this.jestFile === undefined) return false;
    const failed = jestFailedTest(line);
    if (jestSummary.test(line)) this.jestFile = undefined;
    else if (failed !== undefined) this.record(`${this.jestFile} › ${failed}`, 'failed');
    if (!this.inJestTree || line.trim() === '') {
      this.inJestTree = false;
      return true;
    }
    const result = treeLine(line);
    const outcome = result === undefined ? undefined : jestMarks[result.mark];
    if (result === undefined || outcome === undefined) {
      if (indentOf(line) >= 2) this.tree.open(indentOf(line), line.trim(), false);
    } else {
      const name = withoutTiming(result.text).replace(outcome === 'skipped' ? jestStatusWord : '', '');
      const groups = this.tree.result(result.indent, name) ?? [];
      this.record([this.jestFile, ...groups, name].join(' › '), outcome);
    }
    return true;
  }

  /** Lines of vitest's flat list, node:test's spec tree or mocha's spec tree. */
  private treeLine(line: string): void {
    const suite = nodeSuite.exec(line);
    if (suite?.[1] !== undefined && suite[2] !== undefined) {
      this.inNodeRecap = false;
      this.tree.open(suite[1].length, suite[2].trim(), true);
      return;
    }
    const result = treeLine(line);
    const node = result === undefined ? undefined : nodeMarks[result.mark];
    const vitest = result === undefined ? undefined : vitestMarks[result.mark];
    if (result !== undefined && node !== undefined) this.nodeOrMochaResult(result, node);
    else if (result !== undefined && vitest !== undefined) {
      // Only vitest's verbose list names the file and suites (`file > suite > test`).
      if (result.text.includes(' > ')) this.record(withoutTiming(result.text), vitest);
      // Mocha 3 marked a pass ✓ (later ones ✔): it waits for mocha's "N passing", which vitest
      // never prints, so vitest's other ✓ lines (a file's count) are never taken for tests.
      else if (result.mark === '✓' && result.indent >= 2) this.mochaResult(result.indent, result.text, 'passed');
    } else this.mochaLine(line);
  }

  private nodeOrMochaResult(result: TreeLine, outcome: TestOutcome): void {
    if (result.mark === '✖' && result.text === 'failing tests:') {
      this.inNodeRecap = true;
      return;
    }
    if ((this.inNodeRecap && result.mark === '✖') || notATest.test(result.text)) return;
    this.inNodeRecap = false;
    // node:test prints top-level tests at column 0 and nests under `▶`; mocha indents everything.
    if (result.indent === 0 || this.tree.insideSuite(result.indent)) {
      const duration = nodeDuration.exec(result.text);
      const name = duration === null ? withoutTiming(result.text) : result.text.slice(0, duration.index).trim();
      const todo = duration !== null && nodeTodo.test(result.text.slice(duration.index + duration[0].length));
      const groups = this.tree.result(result.indent, name);
      if (groups !== undefined) this.record([...groups, name].join(' › '), todo ? 'skipped' : outcome);
    } else if (result.mark === '✔') this.mochaResult(result.indent, result.text, 'passed');
  }

  private mochaLine(line: string): void {
    if (mochaPassingSummary.test(line)) {
      for (const [name, outcome] of this.mochaWaiting.splice(0)) this.record(name, outcome);
      this.inMochaFailures = false;
      return;
    }
    if (mochaFailingSummary.test(line)) this.inMochaFailures = true;
    const failed = this.inMochaFailures ? null : mochaFailureTitle.exec(line);
    const pending = failed === null ? mochaPending.exec(line) : null;
    const found = failed ?? pending;
    const indent = indentOf(line);
    if (found?.[2] !== undefined && indent >= 2)
      this.mochaResult(indent, found[2], failed === null ? 'skipped' : 'failed');
    else if (indent >= 2 && line.trim() !== '') this.tree.open(indent, line.trim(), false);
  }

  private mochaResult(indent: number, text: string, outcome: TestOutcome): void {
    const name = withoutTiming(text);
    const groups = this.tree.result(indent, name) ?? [];
    this.wait(this.mochaWaiting, [[...groups, name].join(' '), outcome]);
  }

  private wait(queue: Report[], report: Report): void {
    if (queue.length < maxTests) queue.push(report);
    else this.omitted += 1;
  }

  private record(name: string, outcome: TestOutcome): void {
    const key = cutName(name);
    const seen = this.tests.get(key);
    if (seen !== undefined) {
      if (worse[outcome] > worse[seen]) this.tests.set(key, outcome);
    } else if (this.tests.size < maxTests) this.tests.set(key, outcome);
    else this.omitted += 1;
  }
}

const indentOf = (line: string): number => line.length - line.trimStart().length;

/**
 * `name` within {@link maxNameChars}, cut in the middle: a name starts with its file or
 * suites and ends with the test's own title, and both tell tests apart.
 */
function cutName(name: string): string {
  if (name.length <= maxNameChars) return name;
  const head = Math.floor(maxNameChars * 0.4);
  return `${graphemePrefix(name, head)}…${charSuffix(name, maxNameChars - head - 1)}`;
}

/** Each test's outcome in a complete output; see {@link TestStatusScanner}. */
export function testStatuses(output: string): TestStatuses {
  const scanner = new TestStatusScanner();
  scanner.write(output);
  return scanner.end();
}
