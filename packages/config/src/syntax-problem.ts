import { Parser, type YAMLError } from 'yaml';
import type { ConfigProblem } from './errors.js';

/**
 * The one YAML syntax error worth reading, at the line and column to fix. The yaml library
 * reports one mistake as several errors (an over-indented `key: value` is both "nested
 * mappings are not allowed in compact mappings" and "implicit keys need to be on a single
 * line"), and places some where it gave up rather than where the mistake is: an unclosed
 * quote or `[` at the end of the file, an over-indented line on the line above it. The rest
 * follow from the first, so only that one is reported, moved to where the mistake is.
 */
export function syntaxProblem(text: string, errors: readonly YAMLError[]): ConfigProblem {
  const first = errors[0]!;
  // Of several errors at one place, the multi-line key says what happened.
  const error = errors.find((e) => e.code === 'MULTILINE_IMPLICIT_KEY' && e.pos[0] === first.pos[0]) ?? first;
  const firstLine = error.message.split('\n')[0] ?? error.message;
  const reason = firstLine.replace(/ at line \d+, column \d+:?$/, '');
  const at = mistakeOffset(text, error);
  if (at === undefined) return { path: '', message: `YAML syntax error: ${reason}` };
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  const col = at - before.lastIndexOf('\n');
  return { path: '', message: `YAML syntax error at line ${line}, column ${col}: ${reason}${hint(error, at)}` };
}

/** Where the mistake is: the opening of what never closed, the line that went too deep. */
function mistakeOffset(text: string, error: YAMLError): number | undefined {
  const [start, end] = error.pos;
  if (error.code === 'MULTILINE_IMPLICIT_KEY') {
    // A key that starts after `other: ` on its line is that value running on into a deeper
    // indented line: the mistake is that line. One that starts a line is missing its `:`.
    const lineStart = text.lastIndexOf('\n', start - 1) + 1;
    if (text.slice(lineStart, start).trim() === '') return start;
    const deeper = text.indexOf('\n', start) + 1;
    return deeper > 0 && deeper < end ? deeper + (/^[ ]*/.exec(text.slice(deeper))?.[0].length ?? 0) : start;
  }
  if (error.code === 'MISSING_CHAR' || /must be sufficiently indented and end with/.test(error.message)) {
    return unclosedBefore(text, start) ?? start;
  }
  return start;
}

function hint(error: YAMLError, at: number): string {
  if (error.code !== 'MULTILINE_IMPLICIT_KEY') return '';
  if (at === error.pos[0]) return ' (is the `:` after this key missing?)';
  return ' (this line is indented deeper than the key above it, so it reads as that value going on)';
}

/** Offset of the last quote or flow collection opened before `offset` that never closes. */
function unclosedBefore(text: string, offset: number): number | undefined {
  let found: number | undefined;
  const visit = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    const token = node as { type?: string; offset?: number; source?: string; end?: unknown[] };
    if (typeof token.offset === 'number' && token.offset <= offset && isUnclosed(token))
      found = Math.max(found ?? 0, token.offset);
    for (const value of Object.values(node)) visit(value);
  };
  for (const token of new Parser().parse(text)) visit(token);
  return found;
}

function isUnclosed(token: { type?: string; source?: string; end?: unknown[] }): boolean {
  const source = token.source ?? '';
  if (token.type === 'double-quoted-scalar') return source.length < 2 || !/(?<!\\)(?:\\\\)*"$/.test(source.trimEnd());
  if (token.type === 'single-quoted-scalar') return source.length < 2 || !source.trimEnd().endsWith("'");
  if (token.type === 'flow-collection')
    return !(token.end ?? []).some((t) => /^[\]}]$/.test((t as { source?: string }).source ?? ''));
  return false;
}
