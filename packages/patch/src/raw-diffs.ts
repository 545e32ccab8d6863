// Unified diffs written straight into a reply, outside any fence. Alone (with prose around
// them, as `git apply` reads a mail) they are the whole patch; next to SEARCH/REPLACE
// blocks, `*** Begin Patch` sections or file blocks, each is one change among the others.
import { findFences } from './fences.js';

/** Lines `[start, end)` of a reply that hold one unfenced diff. */
export interface Span {
  start: number;
  end: number;
}

/** What may follow a diff's first header inside the diff: hunk lines, git's extended headers, blank lines. */
const diffLine =
  /^(?:[ +\-\\]|@@|diff |index |(?:new|deleted) file mode |old mode |new mode |(?:dis)?similarity index |rename (?:from|to) |copy (?:from|to) |Binary files |GIT binary patch|literal \d|delta \d|\r?$)/;
/** A line of a binary patch's base85 data. */
const base85 = /^[A-Za-z][0-9A-Za-z!#$%&()*+;<=>?@^_`{|}~-]*\r?$/;

/** `diff --git`, or `---` `+++` `@@ -` on three lines: where a diff starts. */
const diffHeaderAt = (lines: readonly string[], i: number): boolean => {
  const line = lines[i] ?? '';
  return (
    line.startsWith('diff --git ') ||
    (line.startsWith('--- ') && (lines[i + 1] ?? '').startsWith('+++ ') && (lines[i + 2] ?? '').startsWith('@@ -'))
  );
};

/**
 * The unfenced diffs of `lines`: each from a header outside every fence that starts in
 * column 0 (the fences a diff's own lines cannot form) to its last diff line, trailing
 * blank lines left out. A line no diff line starts like (prose, a file name, a fence, a
 * SEARCH marker) ends it.
 */
export function rawDiffSpans(lines: readonly string[]): Span[] {
  const fenced = new Set(
    findFences(lines, true).blocks.flatMap((b) => Array.from({ length: b.close - b.open + 1 }, (_, k) => b.open + k)),
  );
  const spans: Span[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (fenced.has(i) || !diffHeaderAt(lines, i)) continue;
    let end = i + 1;
    let binary = false;
    for (; end < lines.length && !fenced.has(end); end += 1) {
      const line = lines[end] ?? '';
      if (line.startsWith('GIT binary patch')) binary = true;
      else if (!diffLine.test(line) && !(binary && base85.test(line))) break;
    }
    while (end > i + 1 && (lines[end - 1] ?? '').trim() === '') end -= 1;
    spans.push({ start: i, end });
    i = end - 1;
  }
  return spans;
}
