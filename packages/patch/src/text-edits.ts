// Applies SEARCH/REPLACE-style edits to a file's text, whole lines at a time. A careful
// human reading a model's edit: the lines it keeps stay as the file has them, its new lines
// take the file's indentation, quotes and line ends; what cannot be placed for sure fails.
import { reindenter } from './indentation.js';
import {
  asciiPunctuation,
  countMatches,
  findAnchor,
  indentationPass,
  keptLines,
  locate,
  passes,
  punctuationPass,
  type Match,
} from './line-match.js';
import type { TextEdit } from './types.js';

/** The new text and how the edits were matched; or why they cannot be applied. */
export type EditResult = { ok: true; text: string; notes: string[] } | { ok: false; error: string };

/** A file's lines: their text, and each one's own line end (`\r\n`, `\n`, or none for a last line without one). */
interface Lines {
  text: string[];
  ends: string[];
}

function split(source: string): Lines {
  const parts = source.split('\n');
  const last = parts.pop() ?? '';
  const text: string[] = [];
  const ends: string[] = [];
  for (const part of parts) {
    const cr = part.endsWith('\r');
    text.push(cr ? part.slice(0, -1) : part);
    ends.push(cr ? '\r\n' : '\n');
  }
  if (last !== '') {
    text.push(last);
    ends.push('');
  }
  return { text, ends };
}

const toLines = (text: string) => split(text).text;

/** A line of `...` (Aider's elision: "the lines in between stay as they are"). */
const elision = (line: string) => /^\s*(\.\.\.|…)\s*$/.test(line);

/**
 * Applies `edits` in order to `text` (undefined: the file does not exist, and only edits
 * with an empty search may create it). Each search is looked for after the previous edit,
 * then from the top, first exactly, then more loosely (the notes say when); the first
 * match is replaced, as Aider does. With an `anchor` (a Begin Patch `@@` line), the search
 * starts after the first line that holds it (after each `outer` line in turn, first), and an
 * anchor not in the file fails the edit.
 * A search that is not found but holds `...` lines is read as Aider reads it: each part
 * between them replaced by the replacement's part, each found once. Every line keeps its
 * own line end; new lines take the file's most common one. All or nothing.
 */
export function applyEdits(text: string | undefined, edits: readonly TextEdit[]): EditResult {
  if (text === undefined && edits.some((e) => e.search.trim() !== ''))
    return { ok: false, error: 'the file does not exist, so there is nothing to search in' };
  const source = text ?? '';
  const lines = split(source);
  const crlf = lines.ends.filter((e) => e === '\r\n').length;
  const eol = crlf > lines.ends.length - crlf - (lines.ends.at(-1) === '' ? 1 : 0) ? '\r\n' : '\n';
  const finalNewline = source === '' || source.endsWith('\n');
  const notes: string[] = [];
  let cursor = 0;
  for (const [n, edit] of edits.entries()) {
    const label = edits.length > 1 ? `edit ${n + 1}` : 'the edit';
    let from = cursor;
    for (const [k, anchor] of [...(edit.outer ?? []), ...(edit.anchor === undefined ? [] : [edit.anchor])].entries()) {
      // Nested @@ lines: each one after the one before it.
      const at = findAnchor(lines.text, anchor, from, k === 0);
      if (at === -1)
        return {
          ok: false,
          error: `${label}: its @@ line ${JSON.stringify(anchor.slice(0, 80))} is not in the file${k === 0 ? '' : ' after the one before it'}; give a line that is, or none`,
        };
      from = at + 1;
    }
    const done =
      edit.search.trim() === ''
        ? insert(lines, toLines(edit.replace), edit.anchor !== undefined ? from : lines.text.length, eol)
        : replaceLines(lines, toLines(edit.search), toLines(edit.replace), {
            from,
            wrap: edit.anchor === undefined,
            eol,
          });
    if (!done.ok) return { ok: false, error: `${label}: ${done.error}` };
    notes.push(...done.notes.map((note) => `${label}: ${note}`));
    cursor = done.cursor;
  }
  const last = lines.text.length - 1;
  const body = lines.text
    .map((line, i) => line + (i < last ? lines.ends[i] || eol : finalNewline ? lines.ends[i] || eol : ''))
    .join('');
  return { ok: true, text: body, notes };
}

type Step = { ok: true; cursor: number; notes: string[] } | { ok: false; error: string };

function insert(lines: Lines, added: readonly string[], at: number, eol: string): Step {
  lines.text.splice(at, 0, ...added);
  lines.ends.splice(at, 0, ...added.map(() => eol));
  return { ok: true, cursor: at + added.length, notes: [] };
}

/** Replaces the first match of `search`, or each `...`-separated part of it. */
function replaceLines(
  lines: Lines,
  search: string[],
  replace: string[],
  where: { from: number; wrap: boolean; eol: string },
): Step {
  const found = locate(lines.text, search, where.from, where.wrap);
  if (found !== undefined) return splice(lines, search, replace, found, where.eol);
  if (search.some(elision)) return replaceParts(lines, search, replace, where);
  // A blank first line models add to SEARCH (Aider drops it too), and to REPLACE with it.
  const blank = search.findIndex((l) => l.trim() !== '');
  if (blank > 0) {
    const drop = replace.findIndex((l) => l.trim() !== '');
    return replaceLines(
      lines,
      search.slice(blank),
      replace.slice(Math.min(blank, drop === -1 ? replace.length : drop)),
      where,
    );
  }
  const first = search.find((l) => l.trim() !== '') ?? '';
  const place = where.wrap ? 'in the file' : 'after its @@ line';
  return {
    ok: false,
    error: `the SEARCH lines were not found ${place} (first: ${JSON.stringify(first.slice(0, 80))}); copy them exactly from the current file`,
  };
}

/** Aider's `...`: the parts between the `...` lines, each replaced in order, each found exactly once. */
function replaceParts(
  lines: Lines,
  search: string[],
  replace: string[],
  where: { from: number; wrap: boolean; eol: string },
): Step {
  const parts = (l: string[]) =>
    l.reduce<string[][]>((acc, line) => (elision(line) ? [...acc, []] : (acc.at(-1)?.push(line), acc)), [[]]);
  const olds = parts(search);
  const news = parts(replace);
  if (olds.length !== news.length)
    return {
      ok: false,
      error: `SEARCH has ${olds.length - 1} "..." line(s) and REPLACE ${news.length - 1}: each "..." must stand in both, for the same lines`,
    };
  let cursor = where.from;
  const notes = ['"..." read as the lines in between, unchanged'];
  for (const [k, old] of olds.entries()) {
    const next = news[k] ?? [];
    if (old.length === 0 && next.length === 0) continue;
    if (old.every((l) => l.trim() === ''))
      return {
        ok: false,
        error:
          'a part of REPLACE between "..." lines has no SEARCH lines to place it by; give the lines it goes next to',
      };
    const found = locate(lines.text, old, cursor, k === 0 && where.wrap);
    if (found === undefined)
      return {
        ok: false,
        error: `the SEARCH part ${k + 1} (between "..." lines) was not found (first: ${JSON.stringify(old[0]?.slice(0, 80))})`,
      };
    if (countMatches(lines.text, old, found.at + 1, found.pass) > 0) {
      return {
        ok: false,
        error: `the SEARCH part ${k + 1} (between "..." lines) is found more than once; give more lines around it`,
      };
    }
    const step = splice(lines, old, next, found, where.eol);
    if (!step.ok) return step;
    notes.push(...step.notes);
    cursor = step.cursor;
  }
  return { ok: true, cursor, notes: [...new Set(notes)] };
}

/** Puts `replace` where `search` matched: kept lines as the file has them, new ones in its style. */
function splice(lines: Lines, search: readonly string[], replace: readonly string[], found: Match, eol: string): Step {
  const matched = lines.text.slice(found.at, found.at + search.length);
  const matchedEnds = lines.ends.slice(found.at, found.at + search.length);
  const kept = keptLines(search, replace);
  // New lines end like the lines they replace (a file with mixed ends keeps them where they are).
  const local = matchedEnds.find((end) => end !== '') ?? eol;
  const fit = fitter(search, matched, found.pass);
  if (!fit.ok) return fit;
  const text: string[] = [];
  const ends: string[] = [];
  for (const [j, line] of replace.entries()) {
    const k = kept.get(j);
    if (k !== undefined) {
      text.push(matched[k] ?? line);
      ends.push(matchedEnds[k] || eol);
      continue;
    }
    const fitted = fit.line(line);
    if (!fitted.ok) return fitted;
    text.push(fitted.line);
    ends.push(local);
  }
  lines.text.splice(found.at, search.length, ...text);
  lines.ends.splice(found.at, search.length, ...ends);
  const note = passes[found.pass]?.note;
  return { ok: true, cursor: found.at + text.length, notes: note === undefined ? [] : [note] };
}

type Fit = (line: string) => { ok: true; line: string } | { ok: false; error: string };

/** How a new line is written into the file, given how loosely the search matched. */
function fitter(
  search: readonly string[],
  matched: readonly string[],
  pass: number,
): { ok: true; line: Fit } | { ok: false; error: string } {
  if (pass < indentationPass) return { ok: true, line: (line) => ({ ok: true, line }) };
  const indent = reindenter(search, matched);
  if (!indent.ok) return indent;
  // Typographic characters the model wrote where the file has none: its new lines have them by the same slip.
  const file = matched.join('\n');
  const slips =
    pass >= punctuationPass
      ? new Set([...search.join('\n')].filter((c) => asciiPunctuation(c) !== c && !file.includes(c)))
      : new Set<string>();
  return {
    ok: true,
    line: (line) =>
      indent.reindent(
        slips.size === 0 ? line : [...line].map((c) => (slips.has(c) ? asciiPunctuation(c) : c)).join(''),
      ),
  };
}
