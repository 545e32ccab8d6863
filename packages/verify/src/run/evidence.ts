import { isAbsolute, relative } from 'node:path';
import type { StepResult } from '../types.js';

/**
 * Whether a failed check shows that it ran on the code, so that its failure says something
 * about the code: it names a failing test, prints an error at a position in a file of the
 * repository (not of `node_modules`, Node's internals or another directory of the host), or
 * prints a test runner's summary or a linter's or compiler's count. A check that fails
 * without any of these (a tool missing behind `make`, vitest unable to load its config)
 * checked nothing, whatever its exit code; a passing check (exit 0) needs no evidence.
 *
 * `workdir` is where the check ran: an absolute path counts only inside it.
 */
export function ranOnCode(result: StepResult, workdir?: string): boolean {
  if ((result.findings?.failingTests.length ?? 0) > 0) return true;
  const blocks = (result.findings?.errors ?? []).map((block) => block.split('\n')[0] ?? '');
  const lines = [...blocks, ...stripAnsi(result.outputTail).split('\n')];
  return lines.some((line) => namesCodePosition(line, workdir) || summaries.some((pattern) => pattern.test(line)));
}

// What a runner or linter prints once it has looked at the code: counts of tests, of
// problems, of files. Each needs a number next to its word, so "Error 127" from make or a
// bare "error" does not count.
const summaries = [
  /\bTests?:?\s+\d+ (failed|passed|skipped|todo)\b/i, // jest `Tests: 1 failed`, vitest `Tests  1 failed`
  /\bTest (Files|Suites):?\s+\d+ /, // vitest, jest
  /^\s*\d+ (passing|failing)\b/, // mocha
  /^[#ℹ] (tests|suites|pass|fail) \d+$/, // node:test
  /^=+ .*\b\d+ (failed|passed)\b.* in [\d.]+s\b/, // pytest (its "1 error" alone is a collection error)
  /^test result: \w+\. \d+ passed/, // cargo
  /\b\d+ problems? \(\d+ errors?, \d+ warnings?\)/, // eslint
  /^Found \d+ (errors?|problems?|warnings?)\b/, // tsc, mypy, ruff, biome
  /\b(issues|problems) found in \d+ files?\b/i, // prettier --check
  /^(FAIL|ok)\s+\S+\s+[\d.]+s$/, // go test, per package
];

// `path.ext:12` or `path.ext(12,` anywhere in a line: a compiler's, linter's or stack frame's
// position. Paths without a dot (`Makefile:3`) are left out: make's own "*** [Makefile:3: x]".
const position = /(?:file:\/\/)?([\w@~+./-]*[\w@~+-]\.[A-Za-z]\w{0,7})[:(]\d+/g;

/** Whether `line` names a position in a file of the repository (see {@link ranOnCode}). */
function namesCodePosition(line: string, workdir: string | undefined): boolean {
  const clean = stripAnsi(line).trim();
  // make's "make: *** [rules.mk:3: lint] Error 127" is make's recipe, not the code.
  if (/^\S*make(\[\d+\])?: \*\*\*/.test(clean)) return false;
  for (const match of clean.matchAll(position)) {
    const path = match[1] ?? '';
    const before = clean.slice(0, match.index);
    if (/node:$|node:internal\//.test(before + path) || path.split('/').includes('node_modules')) continue;
    if (!isAbsolute(path)) return true;
    const inside = workdir === undefined ? undefined : relative(workdir, path);
    if (inside !== undefined && inside !== '' && !inside.startsWith('..') && !isAbsolute(inside)) return true;
  }
  return false;
}

/** Removes terminal colour codes. */
export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;]*[A-Za-z]/g, '');
}

// Lines that say a check never really ran, and the words worth naming it by: the shell's
// "not found", a missing Python module, rustup without a toolchain, a missing module.
const unavailablePatterns = [
  /(^|: )(\S+: )?(command )?not found$/,
  /No module named ['"]?[\w.]+/,
  /could not choose a version of/,
  /error: toolchain '.*' is not installed/,
  /Cannot find module '[^']+'/,
];

// Lines that say what went wrong, when no pattern above names it: an error's own line first
// (vitest's "Error: ENOENT: …" over its "failed to load config from …"), then any.
const errorLine = /^(\w*Error|error|fatal)\b[:[]|\b(ENOENT|EACCES|EROFS|EPERM|No such file or directory|not found)\b/;
const problemWords = /\b(error|cannot|can't|could not|unable|missing|denied|failed)\b/i;

/**
 * Why a failed check did not run on the code, in one line of its output, or undefined when
 * it did: `timed out`; a known "tool missing" line, even where the output names the code (a
 * test module that cannot import its dependency: pytest points at the import); else, when
 * it shows no sign of running on the code ({@link ranOnCode}), its first line that names a
 * problem, its last line or its exit code. Bounded to 200 characters.
 */
export function notRunReason(result: StepResult, workdir?: string): string | undefined {
  if (result.timedOut) return 'timed out';
  const lines = stripAnsi(result.outputTail)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/^at /.test(line));
  for (const line of lines) {
    const match = unavailablePatterns.map((pattern) => pattern.exec(line)?.[0]).find((found) => found !== undefined);
    if (match !== undefined) return match.replace(/^:\s*/, '');
  }
  if (ranOnCode(result, workdir)) return undefined;
  const line = lines.find((l) => errorLine.test(l)) ?? lines.find((l) => problemWords.test(l)) ?? lines.at(-1);
  return (line ?? `exit ${result.exitCode ?? result.signal ?? 'unknown'}`).slice(0, 200);
}

/** Two reasons are the same when they differ only in numbers (a pid, a time, a line). */
export function sameReason(a: string, b: string): boolean {
  const norm = (text: string) => text.replace(/\d+/g, '#').replace(/\s+/g, ' ').trim();
  return norm(a) === norm(b);
}
