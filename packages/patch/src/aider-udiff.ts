// Aider's "udiff" edit format: a unified diff without line numbers, in a ```diff fence,
//   --- path/to/file.py
//   +++ path/to/file.py
//   @@ ... @@
//   -old line
//   +new line
// git cannot read it (a hunk header needs its numbers). Aider applies each hunk by finding
// its old lines (context and `-`) in the file and putting its new ones (context and `+`)
// there; so does this, through the same line matching as SEARCH/REPLACE blocks.
import { PatchParseError } from './errors.js';
import { workspacePath } from './json.js';
import type { PatchCommand, TextEdit } from './types.js';

const numbered = /^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@/;

/** True when `text` has `---`/`+++` headers and a hunk header without line numbers (`@@ ... @@`, `@@ @@`, `@@`). */
export function isAiderUdiff(text: string): boolean {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  const headed = lines.some((l, i) => l.startsWith('--- ') && (lines[i + 1] ?? '').startsWith('+++ '));
  return headed && lines.some((l) => l.startsWith('@@') && !numbered.test(l));
}

/** The file a header pair names, as Aider reads it: `b/` taken off only when the old name has `a/` (or is /dev/null). */
function nameOf(oldLine: string, newLine: string): { path: string; deleted: boolean } {
  const a = oldLine.slice(4).trim().split('\t')[0] ?? '';
  const b = newLine.slice(4).trim().split('\t')[0] ?? '';
  if (b === '/dev/null') return { path: a.startsWith('a/') ? a.slice(2) : a, deleted: true };
  return { path: (a.startsWith('a/') || a === '/dev/null') && b.startsWith('b/') ? b.slice(2) : b, deleted: false };
}

/**
 * The commands of an Aider udiff: per file, a `replace` whose edits are its hunks in order
 * (a hunk with no old lines adds to the end of the file, or creates it), or a `delete` for
 * `+++ /dev/null`. Throws {@link PatchParseError} on a line no hunk holds.
 */
export function parseAiderUdiff(text: string): PatchCommand[] {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  if (lines.at(-1) === '') lines.pop();
  const commands: PatchCommand[] = [];
  // A deleted file's hunks are read, and only its deletion kept.
  let current:
    { path: string; edits: TextEdit[]; deleted: boolean; hunk?: { old: string[]; new: string[] } } | undefined;
  const flush = () => {
    const hunk = current?.hunk;
    // Blank lines before the next file or hunk separate; they are no context to match.
    while (hunk !== undefined && hunk.old.at(-1) === '' && hunk.new.at(-1) === '') {
      hunk.old.pop();
      hunk.new.pop();
    }
    if (current !== undefined && hunk !== undefined && (hunk.old.length > 0 || hunk.new.length > 0)) {
      current.edits.push({ search: joined(hunk.old), replace: joined(hunk.new) });
    }
    if (current !== undefined) delete current.hunk;
  };
  const finish = () => {
    flush();
    if (current !== undefined && !current.deleted && current.edits.length > 0)
      commands.push({
        type: 'file_edit',
        action: 'replace',
        target: workspacePath(current.path),
        edits: current.edits,
      });
    current = undefined;
  };
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] ?? '';
    if (line.startsWith('--- ') && (lines[i + 1] ?? '').startsWith('+++ ')) {
      finish();
      const { path, deleted } = nameOf(line, lines[i + 1] ?? '');
      i += 1;
      if (deleted) commands.push({ type: 'file_edit', action: 'delete', target: workspacePath(path), fileOnly: true });
      current = { path, edits: [], deleted };
      continue;
    }
    if (line.startsWith('@@')) {
      flush();
      if (current !== undefined) current.hunk = { old: [], new: [] };
      continue;
    }
    const hunk = current?.hunk;
    if (hunk === undefined || line.startsWith('\\')) {
      if (line.trim() === '' || line.startsWith('\\') || /^(diff |index |new file mode |deleted file mode )/.test(line))
        continue;
      throw new PatchParseError(
        `udiff line ${i + 1}: ${JSON.stringify(line.slice(0, 80))} stands outside any hunk (a hunk starts with an @@ line)`,
      );
    }
    const op = line[0];
    const rest = line.slice(1);
    if (op === '-' || op === ' ' || line === '') hunk.old.push(rest);
    if (op === '+' || op === ' ' || line === '') hunk.new.push(rest);
    if (op !== '-' && op !== '+' && op !== ' ' && line !== '') {
      throw new PatchParseError(
        `udiff line ${i + 1}: ${JSON.stringify(line.slice(0, 80))} is no hunk line (each starts with " ", "-" or "+")`,
      );
    }
  }
  finish();
  return commands;
}

const joined = (lines: readonly string[]) => (lines.length === 0 ? '' : `${lines.join('\n')}\n`);
