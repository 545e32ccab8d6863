import { graphemePrefix } from '@codefleet/core';
import type { LogFindings } from '../types.js';
import { LineReader } from './lines.js';
import {
  errorBlockStart,
  eslintProblem,
  failingTestName,
  jestFailureHeader,
  mochaFailingSummary,
  mochaFailureTitle,
  nodeTestFailure,
  pathOnly,
  pytestKeep,
  pytestSection,
  pytestSeparator,
  runtimeFrame,
  stackFrame,
  tapNoise,
  tapStack,
  untilBlankStop,
} from './patterns.js';

// Caps that bound memory whatever the log size: far more than 4 KB of feedback can show.
const maxTests = 1000;
const maxTestChars = 300;
const maxErrors = 20;
const maxBlockLines = 40;
const maxMochaTitleLines = 6;
// Stack frames kept per block: the first ones point at the project's code, the rest is noise.
const maxFrames = 3;

/**
 * An error block being collected. Blocks of the simple kinds end at the first line that
 * does not continue them; "swallowing" blocks (a jest, pytest, mocha or node:test failure)
 * own every line until `ends` says otherwise, blank lines and file:line lines included.
 */
interface Block {
  kind: 'indented' | 'until-blank' | 'eslint' | 'swallow';
  lines: string[];
  /** False once the error list is full: the block is tracked (so its lines are not new errors) but not kept. */
  keep: boolean;
  frames: number;
  /** Set once a TAP `stack:` key was seen: the rest of the block is skipped. */
  skipping?: boolean;
  /** Blocks with fewer lines are dropped (a suite-level `✖ suite` with no details). */
  minLines?: number;
  /** The file an eslint block belongs to. */
  file?: string;
  ends?: (line: string) => boolean;
  accepts?: (line: string) => boolean;
}

const indentOf = (line: string): number => line.length - line.trimStart().length;
const isBlank = (line: string): boolean => line.trim() === '';

/**
 * Reads a log line by line, in chunks as they arrive or all at once, and keeps what the
 * agent needs: failing test names and the first error blocks. Time is linear in the input
 * and memory is bounded (lines are capped, lists are capped), so a 50 MB log is fine.
 */
export class LogScanner {
  private readonly reader = new LineReader((line) => this.line(line));
  private readonly tests = new Set<string>();
  private omittedTests = 0;
  private readonly errors: string[] = [];
  private readonly seenErrors = new Set<string>();
  private omittedErrors = 0;
  private block: Block | undefined;
  private lastPath: string | undefined;
  private inMochaFailures = false;
  private mochaTitle: string[] | undefined;

  /** Feeds the next piece of output; pieces may split lines anywhere. */
  write(chunk: string): void {
    this.reader.write(chunk);
  }

  /** Ends the input (a last line without newline counts) and returns what was found. */
  end(): LogFindings {
    this.reader.end();
    this.finishMochaTitle();
    this.closeBlock();
    return {
      failingTests: [...this.tests],
      omittedTests: this.omittedTests,
      errors: [...this.errors],
      omittedErrors: this.omittedErrors,
    };
  }

  /** One line of output, capped and cleaned. */
  private line(line: string): void {
    const mochaTitle = this.testLine(line);
    this.errorLine(line, mochaTitle);
  }

  /** Records a failing test named by `line`; returns true when `line` starts a mocha failure title. */
  private testLine(line: string): boolean {
    if (this.mochaTitle !== undefined) {
      // Mocha splits a failure title over lines (suite, nested suites, test name + ':').
      if (isBlank(line)) this.finishMochaTitle();
      else {
        this.mochaTitle.push(line.trim());
        if (line.endsWith(':') || this.mochaTitle.length >= maxMochaTitleLines) this.finishMochaTitle();
        return false;
      }
    }
    if (mochaFailingSummary.test(line)) this.inMochaFailures = true;
    else if (this.inMochaFailures && mochaFailureTitle.test(line)) {
      this.mochaTitle = [line.trim()];
      if (line.endsWith(':')) this.finishMochaTitle();
      return true;
    }
    const name = failingTestName(line);
    if (name !== undefined) this.addTest(name);
    return false;
  }

  private finishMochaTitle(): void {
    if (this.mochaTitle === undefined) return;
    this.addTest(this.mochaTitle.join(' ').replace(/:$/, ''));
    this.mochaTitle = undefined;
  }

  private addTest(name: string): void {
    const kept = name.length > maxTestChars ? `${graphemePrefix(name, maxTestChars)}…` : name;
    if (this.tests.has(kept)) return;
    if (this.tests.size < maxTests) this.tests.add(kept);
    else this.omittedTests += 1;
  }

  private errorLine(line: string, mochaTitle: boolean): void {
    const current = this.block;
    if (current?.kind === 'swallow') {
      if (!current.ends?.(line)) {
        this.append(line);
        return;
      }
      this.closeBlock();
    }
    if (this.startSwallowing(line, mochaTitle)) return;
    const kind = errorBlockStart(line);
    if (kind !== undefined) {
      this.openBlock({ kind, lines: [line] });
      return;
    }
    const eslint = line.startsWith(' ') ? eslintProblem.exec(line) : null;
    if (eslint !== null) {
      // Warnings do not fail a lint step; only errors are worth the agent's attention.
      if (eslint[1] !== 'error') return;
      if (this.block?.kind === 'eslint' && this.block.file === this.lastPath) this.append(line);
      else {
        const lines = this.lastPath === undefined ? [line] : [this.lastPath, line];
        this.openBlock({ kind: 'eslint', lines, ...(this.lastPath === undefined ? {} : { file: this.lastPath }) });
      }
      return;
    }
    if (!line.includes(' ') && pathOnly.test(line)) {
      this.closeBlock();
      this.lastPath = line.trim();
      return;
    }
    const block = this.block;
    if (block === undefined) return;
    const continues =
      block.kind === 'indented'
        ? !isBlank(line) && /^\s/.test(line)
        : block.kind === 'until-blank' && !isBlank(line) && !untilBlankStop.test(line);
    if (continues) this.append(line);
    else this.closeBlock();
  }

  /** Opens a block for a test failure whose details span blank lines; true when it did. */
  private startSwallowing(line: string, mochaTitle: boolean): boolean {
    if (jestFailureHeader(line) !== undefined) {
      // Jest details are indented under `  ● name` and end at the next less indented line.
      this.openBlock({ kind: 'swallow', lines: [line.trim()], ends: (next) => !isBlank(next) && indentOf(next) < 3 });
      return true;
    }
    if (line.startsWith('___') && pytestSection.test(line)) {
      this.openBlock({
        kind: 'swallow',
        lines: [line],
        ends: (next) => pytestSection.test(next) || pytestSeparator.test(next),
        accepts: (next) => pytestKeep.test(next),
      });
      return true;
    }
    if (mochaTitle) {
      this.openBlock({ kind: 'swallow', lines: [line.trim()], ends: (next) => mochaFailureTitle.test(next) });
      return true;
    }
    if (nodeTestFailure.test(line) && failingTestName(line) !== undefined) {
      const indent = indentOf(line);
      this.openBlock({
        kind: 'swallow',
        lines: [line.trim()],
        minLines: 2,
        ends: (next) => !isBlank(next) && indentOf(next) <= indent,
        accepts: (next) => !tapNoise.test(next),
      });
      return true;
    }
    return false;
  }

  private openBlock(block: Omit<Block, 'keep' | 'frames'>): void {
    this.closeBlock();
    this.block = { ...block, keep: this.errors.length < maxErrors, frames: 0 };
  }

  private append(line: string): void {
    const block = this.block;
    if (block === undefined || !block.keep || block.skipping || block.lines.length >= maxBlockLines) return;
    if (isBlank(line) || (block.accepts !== undefined && !block.accepts(line))) return;
    if (tapStack.test(line)) {
      block.skipping = true;
      return;
    }
    if (stackFrame.test(line)) {
      if (runtimeFrame.test(line) || block.frames >= maxFrames) return;
      block.frames += 1;
    }
    block.lines.push(line);
  }

  private closeBlock(): void {
    const block = this.block;
    this.block = undefined;
    if (block === undefined || block.lines.length < (block.minLines ?? 1)) return;
    // Jest and node:test repeat every failure in a closing summary, differently indented.
    const key = block.lines.map((line) => line.trim()).join('\n');
    if (this.seenErrors.has(key)) return;
    if (!block.keep || this.errors.length >= maxErrors) {
      this.omittedErrors += 1;
      return;
    }
    this.seenErrors.add(key);
    this.errors.push(block.lines.join('\n'));
  }
}

/** Scans a complete log at once; see {@link LogScanner}. */
export function scanLog(log: string): LogFindings {
  const scanner = new LogScanner();
  scanner.write(log);
  return scanner.end();
}
