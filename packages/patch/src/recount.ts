// Hunk line counts as models write them: often one off. git reads a hunk by its counts, so
// a count too large swallows the next header (git refuses the patch) and one too small
// leaves the hunk's last lines behind as garbage (git applies the rest, silently less).

const hunkHeader = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/;

/** The result of {@link recountHunks}: the text, and how many hunk headers were rewritten. */
export interface Recounted {
  text: string;
  recounted: number;
}

/**
 * Rewrites the line counts of every hunk whose header does not fit its body (what `git
 * apply --recount` does, but only where the counts are wrong): the body runs to the next
 * hunk or file header, or to the first line that is no hunk line, and trailing blank lines
 * are not part of it (a separator, or prose after the diff). An empty line inside a body
 * is a context line whose leading space was lost. Works on text or on a byte string
 * (latin1), line ends kept; a hunk that fits is left exactly as written.
 */
export function recountHunks(text: string): Recounted {
  const lines = text.split('\n');
  // The text's final newline ends the last line; it starts no line of its own.
  const ended = lines.at(-1) === '';
  if (ended) lines.pop();
  let recounted = 0;
  for (let i = 0; i < lines.length; i += 1) {
    const match = hunkHeader.exec(stripCr(lines[i] ?? ''));
    if (match === null) continue;
    const { end, hardEnd } = bodyEnd(lines, i + 1);
    const declared = {
      old: match[2] === undefined ? 1 : Number(match[2]),
      new: match[4] === undefined ? 1 : Number(match[4]),
    };
    if (fits(lines, i + 1, end, hardEnd, declared)) continue;
    let oldLines = 0;
    let newLines = 0;
    for (let j = i + 1; j < end; j += 1) {
      const c = (lines[j] ?? '')[0];
      if (c === '-' || c === ' ' || c === undefined || c === '\r') oldLines += 1;
      if (c === '+' || c === ' ' || c === undefined || c === '\r') newLines += 1;
    }
    if (oldLines + newLines === 0) continue;
    const cr = (lines[i] ?? '').endsWith('\r') ? '\r' : '';
    lines[i] = `@@ -${match[1]},${oldLines} +${match[3]},${newLines} @@${match[5] ?? ''}${cr}`;
    recounted += 1;
    i = end - 1;
  }
  return { text: recounted === 0 ? text : lines.join('\n') + (ended ? '\n' : ''), recounted };
}

const stripCr = (line: string) => (line.endsWith('\r') ? line.slice(0, -1) : line);

/**
 * Where the hunk body starting at `from` ends: `hardEnd` at the first line that cannot be
 * part of it (a header, or a line no hunk line starts like), `end` before the blank lines
 * and the format-patch signature that may come before that.
 */
function bodyEnd(lines: string[], from: number): { end: number; hardEnd: number } {
  let hardEnd = from;
  let end = from;
  let signed = false;
  for (let j = from; j < lines.length; j += 1) {
    const line = lines[j] ?? '';
    const c = line[0];
    if (line.startsWith('@@ ') || line.startsWith('diff ') || isFileHeader(lines, j)) break;
    if (c !== ' ' && c !== '-' && c !== '+' && c !== '\\' && stripCr(line) !== '') break;
    hardEnd = j + 1;
    if (signed || isSignature(lines, j)) signed = true;
    else if (stripCr(line) !== '') end = j + 1;
  }
  return { end, hardEnd };
}

/** `--- name` then `+++ name`: the next file of a traditional diff, not a removed line. */
const isFileHeader = (lines: string[], j: number) =>
  (lines[j] ?? '').startsWith('--- ') && (lines[j + 1] ?? '').startsWith('+++ ');

/** format-patch's `-- ` line, the git version on the next: the end of the patch. */
const isSignature = (lines: string[], j: number) => stripCr(lines[j] ?? '') === '-- ' && /^\d/.test(lines[j + 1] ?? '');

/**
 * Do the declared counts take the lines from `from` to at least `end` (a `\ No newline`
 * line aside) and no further than `hardEnd`, as git would read them? What they take past
 * `end` are blank lines (empty context) or a line that looked like the signature.
 */
function fits(
  lines: string[],
  from: number,
  end: number,
  hardEnd: number,
  declared: { old: number; new: number },
): boolean {
  let { old, new: added } = declared;
  let j = from;
  for (; j < hardEnd && (old > 0 || added > 0); j += 1) {
    const c = (lines[j] ?? '')[0];
    if (c === ' ' || c === undefined || c === '\r') {
      old -= 1;
      added -= 1;
    } else if (c === '-') old -= 1;
    else if (c === '+') added -= 1;
    else if (c !== '\\') return false;
  }
  if (old !== 0 || added !== 0) return false;
  while (j < hardEnd && (lines[j] ?? '').startsWith('\\')) j += 1;
  return j >= end;
}
