// The `*** Begin Patch` format OpenAI's models are trained to write (Codex's apply_patch):
//   *** Begin Patch
//   *** Add File: path        then the file's lines, each after a `+`
//   *** Delete File: path
//   *** Update File: path     optionally `*** Move to: new path`, then chunks: an `@@` line
//                              (with an optional line to find first) and lines after ` `,
//                              `-` or `+`; `*** End of File` may end a chunk
//   *** End Patch
import { PatchParseError } from './errors.js';
import type { PatchCommand, TextEdit } from './types.js';

// Marker lines may be padded with white space, as Codex accepts them.
const begin = /^\s*\*\*\* Begin Patch\s*$/;
const end = /^\s*\*\*\* End Patch\s*$/;
/** A line that starts a file operation or ends the patch (padded or not): never a context line. */
const marker = (line: string) =>
  /^\s*\*\*\* (Add File|Delete File|Update File|End Patch|Move to|End of File)\b/.test(line);

/** True when `text` holds a `*** Begin Patch` line. */
export const hasBeginPatch = (text: string): boolean => /^\s*\*\*\* Begin Patch\s*$/m.test(text);

/**
 * The commands of every `*** Begin Patch` ... `*** End Patch` section in `lines`: `create`
 * for an added file, `delete`, and `replace` (with `metadata.destination` for a move) for
 * an updated one. Throws {@link PatchParseError} naming the line of a section it cannot read.
 */
export function parseBeginPatch(lines: readonly string[], lineOffset = 0): PatchCommand[] {
  const commands: PatchCommand[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (!begin.test(lines[i] ?? '')) continue;
    let j = i + 1;
    const fail = (why: string): never => {
      throw new PatchParseError(`*** Begin Patch, line ${lineOffset + j + 1}: ${why}`);
    };
    while (j < lines.length && !end.test(lines[j] ?? '')) {
      const line = (lines[j] ?? '').trim();
      const op = /^\*\*\* (Add|Delete|Update) File: (.+)$/.exec(line);
      if (op === null) {
        if (line.trim() === '') {
          j += 1;
          continue;
        }
        fail(
          `expected "*** Add File:", "*** Delete File:" or "*** Update File:", got ${JSON.stringify(line.slice(0, 80))}`,
        );
      }
      const [, kind, rawPath = ''] = op ?? [];
      const target = rawPath.trim();
      j += 1;
      if (kind === 'Delete') {
        commands.push({ type: 'file_edit', action: 'delete', target, fileOnly: true });
      } else if (kind === 'Add') {
        const body: string[] = [];
        for (; j < lines.length && (lines[j] ?? '').startsWith('+'); j += 1) body.push((lines[j] ?? '').slice(1));
        commands.push({
          type: 'file_edit',
          action: 'create',
          target,
          content: body.length === 0 ? '' : `${body.join('\n')}\n`,
        });
      } else {
        const move = /^\*\*\* Move to: (.+)$/.exec((lines[j] ?? '').trim());
        if (move) j += 1;
        const read = readChunks(lines, j);
        if (read.edits.length === 0) fail(`"*** Update File: ${target}" changes nothing`);
        j = read.next;
        commands.push({
          type: 'file_edit',
          action: 'replace',
          target,
          edits: read.edits,
          ...(move ? { metadata: { destination: (move[1] ?? '').trim() } } : {}),
        });
      }
    }
    if (j >= lines.length) fail('no "*** End Patch" line');
    i = j;
  }
  return commands;
}

/** The chunks of an update from line `from`: each one's old and new lines, and its `@@` line. */
function readChunks(lines: readonly string[], from: number): { edits: TextEdit[]; next: number } {
  const edits: TextEdit[] = [];
  let j = from;
  let chunk: { old: string[]; new: string[]; anchor?: string; outer: string[] } | undefined;
  const flush = () => {
    // Blank lines before the next section separate; they are no context to match.
    while (chunk !== undefined && chunk.old.at(-1) === '' && chunk.new.at(-1) === '') {
      chunk.old.pop();
      chunk.new.pop();
    }
    if (chunk !== undefined && (chunk.old.length > 0 || chunk.new.length > 0)) {
      edits.push({
        search: joined(chunk.old),
        replace: joined(chunk.new),
        ...(chunk.anchor ? { anchor: chunk.anchor } : {}),
        ...(chunk.outer.length > 0 ? { outer: chunk.outer } : {}),
      });
    }
    chunk = undefined;
  };
  for (; j < lines.length; j += 1) {
    const line = (lines[j] ?? '').replace(/\r$/, '');
    if (/^\s*\*\*\* End of File/.test(line)) continue;
    if (line.startsWith('*** ') || marker(line)) break;
    if (line.startsWith('@@')) {
      // An @@ line right after another narrows it: the class, then its method.
      const outer =
        chunk !== undefined && chunk.old.length === 0 && chunk.new.length === 0 && chunk.anchor !== undefined
          ? [...chunk.outer, chunk.anchor]
          : [];
      flush();
      const anchor = line.slice(2).trim() || outer.pop() || '';
      chunk = { old: [], new: [], outer, ...(anchor === '' ? {} : { anchor }) };
      continue;
    }
    chunk ??= { old: [], new: [], outer: [] };
    const c = line[0];
    const text = line.slice(1);
    if (c === '+') chunk.new.push(text);
    else if (c === '-') chunk.old.push(text);
    else if (c === ' ' || line === '') {
      chunk.old.push(text);
      chunk.new.push(text);
    } else break;
  }
  flush();
  return { edits, next: j };
}

const joined = (lines: readonly string[]) => (lines.length === 0 ? '' : `${lines.join('\n')}\n`);
