// A model writes its diff with LF line ends, whatever the file has. On a file with CRLF
// line ends none of its context lines match; git's whitespace-ignoring fallback then
// applies it and the new lines come out LF among CRLF ones: a file with mixed line ends.
// A careful human would write the diff in the file's line ends; so does this.
import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DiffUnreadable, readDiff } from './diff-headers.js';

/** The diff with the hunks of every CRLF file given CRLF ends, and the files that needed it. */
export interface LineEnds {
  bytes: Buffer;
  converted: string[];
}

/** True when every line of `bytes` ends in CRLF (a last line without an end aside). */
const allCrlf = (bytes: Buffer): boolean => {
  const text = bytes.toString('latin1');
  return text.includes('\r\n') && !/(^|[^\r])\n/.test(text);
};

/** Where each file's part of the diff starts: its `diff --git` lines, or its `---` `+++` pair in a diff without them. */
function sectionStarts(lines: readonly string[]): number[] {
  const git = lines.flatMap((line, i) => (line.startsWith('diff --git ') ? [i] : []));
  if (git.length > 0) return git;
  return lines.flatMap((line, i) => (line.startsWith('--- ') && (lines[i + 1] ?? '').startsWith('+++ ') ? [i] : []));
}

/**
 * Gives the hunk lines of each file that has CRLF line ends in `root` (every line) CRLF
 * ends too, when the diff's lines for it have none at all; an empty context line becomes
 * ` \r`, and a line before `\ No newline` keeps none. Files the diff creates, and diffs
 * already in CRLF, are left as they are. Paths were checked inside `root` before.
 */
export async function matchLineEnds(root: string, diff: Buffer, strip: number): Promise<LineEnds> {
  const lines = diff.toString('latin1').split('\n');
  const starts = sectionStarts(lines);
  const converted: string[] = [];
  for (const [k, start] of starts.entries()) {
    const end = starts[k + 1] ?? lines.length;
    const target = await crlfTarget(root, lines.slice(start, end).join('\n'), strip);
    if (target === undefined) continue;
    const hunk = hunkLines(lines, start, end);
    if (hunk.length === 0 || hunk.some((j) => (lines[j] ?? '').endsWith('\r'))) continue;
    for (const j of hunk) {
      const line = lines[j] ?? '';
      if ((lines[j + 1] ?? '').startsWith('\\')) continue;
      lines[j] = line === '' ? ' \r' : `${line}\r`;
    }
    converted.push(target);
  }
  return { bytes: converted.length === 0 ? diff : Buffer.from(lines.join('\n'), 'latin1'), converted };
}

/** The file a section changes in place, when it exists and has CRLF line ends. */
async function crlfTarget(root: string, section: string, strip: number): Promise<string | undefined> {
  let target: string | undefined;
  try {
    const [file] = readDiff(section, { strip });
    target = file?.oldPath === undefined ? undefined : file.oldPath;
  } catch (error) {
    if (error instanceof DiffUnreadable) return undefined;
    throw error;
  }
  if (target === undefined) return undefined;
  const path = join(root, target);
  if (
    !(await lstat(path).then(
      (s) => s.isFile(),
      () => false,
    ))
  )
    return undefined;
  return allCrlf(await readFile(path)) ? target : undefined;
}

const hunkHeader = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/;

/** Indexes of the hunk body lines between `start` and `end`, as many as each `@@` header counts; `\ No newline` lines aside. */
function hunkLines(lines: readonly string[], start: number, end: number): number[] {
  const found: number[] = [];
  for (let j = start; j < end; j += 1) {
    const header = hunkHeader.exec(lines[j] ?? '');
    if (header === null) continue;
    let old = header[1] === undefined ? 1 : Number(header[1]);
    let added = header[2] === undefined ? 1 : Number(header[2]);
    for (j += 1; j < end && (old > 0 || added > 0); j += 1) {
      const c = (lines[j] ?? '')[0];
      if (c === '\\') continue;
      if (c === '-') old -= 1;
      else if (c === '+') added -= 1;
      else {
        old -= 1;
        added -= 1;
      }
      found.push(j);
    }
    j -= 1;
  }
  return found;
}
