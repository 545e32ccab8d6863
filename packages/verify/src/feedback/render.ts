import { utf8ByteLength, utf8Prefix, utf8Suffix } from '@codefleet/core';
import type { LogFindings } from '../types.js';
import { runtimeFrame, stackFrame } from './patterns.js';

/** Lines of output under a byte budget: the joined text (newline-separated) stays within `max`. */
class Budget {
  readonly lines: string[] = [];
  private used = 0;

  constructor(private readonly max: number) {}

  /** Bytes still free for the next line's text (its separating newline already deducted). */
  get left(): number {
    return this.max - this.used - (this.lines.length > 0 ? 1 : 0);
  }

  /** Whether `line` fits with `reserve` bytes to spare for a later line (newline included). */
  fits(line: string, reserve = 0): boolean {
    return utf8ByteLength(line) + reserve <= this.left;
  }

  add(line: string): void {
    this.used += utf8ByteLength(line) + (this.lines.length > 0 ? 1 : 0);
    this.lines.push(line);
  }

  /** Takes back the last line (a heading that turned out to have nothing under it). */
  pop(): void {
    const line = this.lines.pop();
    if (line !== undefined) this.used -= utf8ByteLength(line) + (this.lines.length > 0 ? 1 : 0);
  }

  /** Adds `line` if it fits; returns whether it did. */
  offer(line: string): boolean {
    if (!this.fits(line)) return false;
    this.add(line);
    return true;
  }

  text(): string {
    return this.lines.join('\n');
  }
}

// Room kept for a "…[N more]" marker while filling a section that may not fit whole.
const markerReserve = 48;
const minDedupeChars = 8;

/** Inputs of {@link renderFeedback}. */
export interface RenderInput {
  /** A first line that always leads (the failed step), cut if even it does not fit. */
  header?: string;
  findings: LogFindings;
  /** The last lines of the output, oldest first, already cleaned. */
  tail: string[];
  maxBytes: number;
}

/**
 * Renders feedback within `maxBytes` (UTF-8, markers included) in priority order: every
 * failing test name (as many as fit), then the first error blocks in whole lines (the
 * first one cut at a line boundary, with a marker, only when it alone exceeds the
 * budget), then as many whole lines of the output's end as remain, minus lines already shown.
 */
export function renderFeedback(input: RenderInput): string {
  const budget = new Budget(Math.max(0, Math.floor(input.maxBytes)));
  if (input.header !== undefined && !budget.offer(input.header)) {
    budget.add(utf8Prefix(input.header, Math.max(0, budget.left)));
    return budget.text();
  }
  const { findings } = input;
  const shown = new Set<string>();
  const headerLines = budget.lines.length;
  addTests(budget, withoutDuplicates(findings.failingTests), findings.omittedTests, shown);
  addErrors(budget, findings, shown, budget.lines.length === headerLines);
  addTail(budget, input.tail, shown, budget.lines.length === headerLines);
  return budget.text();
}

/** Jest prints a test as `✕ name` and again as `● Suite › name`; the second says more. */
function withoutDuplicates(names: readonly string[]): string[] {
  const covered = new Set<string>();
  for (const name of names) {
    if (!name.startsWith('● ')) continue;
    const parts = name.slice(2).split(' › ');
    covered.add(parts.at(-1) ?? '');
  }
  return names.filter((name) => !(name.startsWith('✕ ') && covered.has(name.slice(2))));
}

function addTests(budget: Budget, names: readonly string[], omitted: number, shown: Set<string>): void {
  if (names.length === 0) return;
  const total = names.length + omitted;
  const heading = `Failing tests (${total}):`;
  const first = names[0] ?? '';
  if (!budget.fits(heading, utf8ByteLength(first) + 1)) return;
  budget.add(heading);
  const allFit = omitted === 0 && names.reduce((sum, name) => sum + utf8ByteLength(name) + 1, 0) - 1 <= budget.left;
  let added = 0;
  for (const name of names) {
    if (!budget.fits(name, allFit ? 0 : markerReserve)) break;
    budget.add(name);
    shown.add(name.trim());
    added += 1;
  }
  if (added < total) budget.offer(`…[${total - added} more failing tests not shown]`);
}

function addErrors(budget: Budget, findings: LogFindings, shown: Set<string>, alone: boolean): void {
  const blocks = findings.errors;
  const total = blocks.length + findings.omittedErrors;
  if (blocks.length === 0) return;
  const heading = total === 1 ? 'First error:' : 'First errors:';
  const firstLines = (blocks[0] ?? '').split('\n');
  // The heading is only worth it when at least one line of the first error comes with it.
  if (!budget.fits(heading, alone ? 0 : utf8ByteLength(firstLines[0] ?? '') + 1)) return;
  budget.add(heading);
  let added = 0;
  for (const [index, block] of blocks.entries()) {
    const lines = block.split('\n');
    const size = lines.reduce((sum, line) => sum + utf8ByteLength(line) + 1, 0);
    const last = index === blocks.length - 1 && findings.omittedErrors === 0;
    if (size - 1 + (last ? 0 : markerReserve) <= budget.left) {
      for (const line of lines) {
        budget.add(line);
        shown.add(line.trim());
      }
      added += 1;
      continue;
    }
    if (index === 0 && !addCutBlock(budget, lines, shown)) budget.pop();
    break;
  }
  if (added > 0 && added < total) budget.offer(`…[${total - added} more errors not shown]`);
}

/** The first error alone exceeds the budget: keep its leading whole lines and say so; false when nothing fit. */
function addCutBlock(budget: Budget, lines: readonly string[], shown: Set<string>): boolean {
  let added = 0;
  for (const line of lines) {
    // Room for the marker is kept, except that the first line whole matters more than it.
    if (!budget.fits(line, added === 0 ? 0 : markerReserve)) break;
    budget.add(line);
    shown.add(line.trim());
    added += 1;
  }
  if (added === 0) {
    // Not even its first line fits: cut that line (at a character boundary) rather than lose it.
    const marker = ' …[cut]';
    const room = budget.left - utf8ByteLength(marker) - markerReserve;
    if (room <= 0) return false;
    budget.add(`${utf8Prefix(lines[0] ?? '', room)}${marker}`);
    added = 1;
  }
  const rest = lines.length - added;
  budget.offer(rest === 0 ? '…[error truncated]' : `…[error truncated: ${rest} more lines]`);
  return true;
}

function addTail(budget: Budget, tail: readonly string[], shown: Set<string>, alone: boolean): void {
  const lines: string[] = [];
  for (const line of tail) {
    const blank = line.trim() === '';
    // Runs of blank lines and runtime stack frames cost bytes and tell the agent nothing.
    if (blank) {
      if (lines.length > 0 && lines.at(-1) !== '') lines.push('');
      continue;
    }
    // Lines already shown above are left out, except short ones (`}`, `...`) that only
    // make sense where they are.
    const trimmed = line.trim();
    if ((trimmed.length >= minDedupeChars && shown.has(trimmed)) || (stackFrame.test(line) && runtimeFrame.test(line)))
      continue;
    lines.push(line);
  }
  if (lines.at(-1) === '') lines.pop();
  if (lines.length === 0) return;
  const heading = 'Output (last lines):';
  // Walk back from the end taking whole lines while they fit (heading included).
  let room = budget.left - utf8ByteLength(heading);
  let start = lines.length;
  while (start > 0) {
    const size = utf8ByteLength(lines[start - 1] ?? '') + 1;
    if (size > room) break;
    room -= size;
    start -= 1;
  }
  if (start === lines.length) {
    // Only when the tail is all there is do we cut its last line; otherwise leave it out.
    if (!alone) return;
    const marker = '…';
    const keep = budget.left - utf8ByteLength(heading) - 1 - utf8ByteLength(marker);
    if (keep <= 0) return;
    budget.add(heading);
    budget.add(`${marker}${utf8Suffix(lines.at(-1) ?? '', keep)}`);
    return;
  }
  budget.add(heading);
  for (const line of lines.slice(start)) budget.add(line);
}
