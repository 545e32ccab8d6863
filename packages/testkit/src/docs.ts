import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The documentation's examples are tested as written: the tests read them from README.md and
// docs/*.md themselves, wherever a section lives, so the docs and the tests cannot drift and
// a section moved between files stays tested.

/** The repository's root (this file is in packages/testkit/src or packages/testkit/dist). */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** README.md and every docs/*.md, as paths from the repository root, README first. */
export function docFiles(): string[] {
  const docs = readdirSync(join(repoRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

/** A fence's line: ``` with an optional language, possibly indented (a list item's block). */
const fenceLine = /^\s*```[\w-]*\s*$/;

/** Headings outside code blocks: their line index, level and text. */
function headings(lines: string[]): { index: number; level: number; text: string }[] {
  const found: { index: number; level: number; text: string }[] = [];
  let inFence = false;
  lines.forEach((line, index) => {
    if (fenceLine.test(line)) inFence = !inFence;
    const m = inFence ? null : /^(#{1,6}) (.*)$/.exec(line);
    if (m) found.push({ index, level: m[1]!.length, text: m[2]! });
  });
  return found;
}

/**
 * The section under the heading `heading` (its text, any level) in README.md or docs/*.md: from
 * the line after the heading to the next heading of the same or a higher level, and the file it
 * is in. Throws when no file or more than one has it, naming the heading.
 */
export function docSection(heading: string): { file: string; text: string } {
  const hits = docFiles().flatMap((file) => {
    const lines = readFileSync(join(repoRoot, file), 'utf8').split('\n');
    const all = headings(lines);
    return all.flatMap((h, i) => {
      if (h.text !== heading) return [];
      const next = all.slice(i + 1).find((later) => later.level <= h.level);
      return [{ file, text: lines.slice(h.index + 1, next?.index).join('\n') }];
    });
  });
  if (hits.length !== 1) {
    throw new Error(`the docs have ${hits.length} sections "${heading}" (README.md and docs/*.md)`);
  }
  return hits[0]!;
}

/**
 * The fenced code blocks of `text`, in order, with their language ('' for none); a block
 * indented under a list item comes without that indentation.
 */
export function codeBlocks(text: string): { lang: string; code: string }[] {
  return [...text.matchAll(/^( *)```(\w*)\n([\s\S]*?)^\1```$/gm)].map((m) => {
    const indent = m[1]!.length;
    const code = m[3]!.replace(/^.*$/gm, (line) => line.slice(Math.min(indent, line.length - line.trimStart().length)));
    return { lang: m[2]!, code };
  });
}
