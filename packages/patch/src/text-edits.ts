// Applies SEARCH/REPLACE-style edits to a file's text, whole lines at a time. Models copy
// the lines they mean to change, but not always exactly: trailing white space goes, and
// indentation shifts when a block is quoted out of its context.
import type { TextEdit } from './types.js';

/** The new text and how the edits were matched; or why they cannot be applied. */
export type EditResult = { ok: true; text: string; notes: string[] } | { ok: false; error: string };

type Compare = (a: string, b: string) => boolean;

/** Exact lines first; then ignoring trailing white space; then ignoring indentation too. */
const passes: { compare: Compare; note?: string }[] = [
  { compare: (a, b) => a === b },
  { compare: (a, b) => a.trimEnd() === b.trimEnd(), note: 'matched ignoring trailing white space' },
  { compare: (a, b) => a.trim() === b.trim(), note: 'matched ignoring indentation' },
];

const toLines = (text: string) => {
  const lines = text.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
  if (lines.at(-1) === '') lines.pop();
  return lines;
};

/**
 * Applies `edits` in order to `text` (undefined: the file does not exist, and only edits
 * with an empty search may create it). Each search is looked for after the previous edit,
 * then from the top, first exactly, then more loosely (the notes say when); the first
 * match is replaced, as Aider does. Line ends (LF or CRLF) and a missing final newline are
 * kept. All or nothing: one edit that does not match fails them all.
 */
export function applyEdits(text: string | undefined, edits: readonly TextEdit[]): EditResult {
  if (text === undefined && edits.some((e) => e.search.trim() !== '')) return { ok: false, error: 'the file does not exist, so there is nothing to search in' };
  const source = text ?? '';
  const eol = source.includes('\r\n') ? '\r\n' : '\n';
  const finalNewline = source === '' || source.endsWith('\n');
  const lines = toLines(source);
  const notes: string[] = [];
  let cursor = 0;
  for (const [n, edit] of edits.entries()) {
    const label = edits.length > 1 ? `edit ${n + 1}` : 'the edit';
    const search = toLines(edit.search);
    let replace = toLines(edit.replace);
    let from = cursor;
    if (edit.anchor !== undefined) {
      const at = findAnchor(lines, edit.anchor, cursor);
      if (at === -1) notes.push(`${label}: the line ${JSON.stringify(edit.anchor.slice(0, 60))} was not found; searched without it`);
      else from = at + 1;
    }
    if (search.length === 0 || search.every((l) => l.trim() === '')) {
      const at = edit.anchor !== undefined && from > cursor ? from : lines.length;
      lines.splice(at, 0, ...replace);
      cursor = at + replace.length;
      continue;
    }
    const found = locate(lines, search, from);
    if (found === undefined) {
      return { ok: false, error: `${label}: the SEARCH lines were not found in the file (first: ${JSON.stringify(search[0]?.slice(0, 80))}); copy them exactly from the current file` };
    }
    if (found.note !== undefined) notes.push(`${label}: ${found.note}`);
    if (found.pass === 2) replace = reindent(replace, search, lines.slice(found.at, found.at + search.length));
    lines.splice(found.at, search.length, ...replace);
    cursor = found.at + replace.length;
  }
  const body = lines.join(eol);
  return { ok: true, text: lines.length === 0 ? '' : finalNewline ? `${body}${eol}` : body, notes };
}

/** Where `search` first matches in `lines`, looking after `from` and then from the top, pass by pass. */
function locate(lines: readonly string[], search: readonly string[], from: number): { at: number; pass: number; note?: string } | undefined {
  for (const [pass, { compare, note }] of passes.entries()) {
    for (const start of from > 0 ? [from, 0] : [0]) {
      for (let at = start; at + search.length <= lines.length; at += 1) {
        if (search.every((line, k) => compare(lines[at + k] ?? '', line))) return { at, pass, ...(note === undefined ? {} : { note }) };
      }
    }
  }
  return undefined;
}

function findAnchor(lines: readonly string[], anchor: string, from: number): number {
  const want = anchor.trim();
  for (const start of from > 0 ? [from, 0] : [0]) {
    const at = lines.findIndex((line, i) => i >= start && (line.trim() === want || line.includes(want)));
    if (at !== -1) return at;
  }
  return -1;
}

/** When the file's lines are the search's indented by more, the replacement is indented by as much. */
function reindent(replace: string[], search: readonly string[], matched: readonly string[]): string[] {
  const k = search.findIndex((l) => l.trim() !== '');
  const extra = k === -1 ? '' : leading(matched[k] ?? '');
  const had = k === -1 ? '' : leading(search[k] ?? '');
  if (!extra.startsWith(had) || extra === had) return replace;
  const add = extra.slice(had.length);
  return replace.map((l) => (l.trim() === '' ? l : add + l));
}

const leading = (line: string) => /^[ \t]*/.exec(line)?.[0] ?? '';
