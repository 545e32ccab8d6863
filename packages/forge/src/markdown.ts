// Markdown building blocks for text we do not control (issue titles, agent output):
// whatever it contains must stay inside the cell, line or block it was put in.

/** Zero-width space as an entity: breaks GitHub autolinks without changing how text reads. */
const zwsp = '&#8203;';

function escapeChar(ch: string, next: string | undefined): string {
  switch (ch) {
    case '\n':
    case '\r':
    case '\t':
      return ' ';
    case '&':
      return '&amp;';
    case '<':
      return '&lt;';
    case '>':
      return '&gt;';
    case '@':
      // `@user` would ping; `#12` would link, and after "Fixes" close, another issue.
      return next !== undefined && /[A-Za-z0-9_-]/.test(next) ? `@${zwsp}` : '@';
    case '#':
      return next !== undefined && /[0-9]/.test(next) ? `#${zwsp}` : '\\#';
    default:
      return '\\`*_{}[]|~!'.includes(ch) ? `\\${ch}` : ch;
  }
}

/**
 * Escapes untrusted text for one line of Markdown or one table cell: newlines become
 * spaces, `|` and other markup are backslash-escaped, mentions and issue references are
 * broken with a zero-width space. Output is at most `maxChars` long; the cut happens
 * between escapes, so it can never leave a dangling backslash that would eat a `|`.
 */
export function escapeInline(text: string, maxChars = Number.POSITIVE_INFINITY): string {
  let out = '';
  const chars = Array.from(text);
  for (let i = 0; i < chars.length; i += 1) {
    const piece = escapeChar(chars[i] ?? '', chars[i + 1]);
    const reserve = i + 1 < chars.length ? 1 : 0;
    if (out.length + piece.length + reserve > maxChars) return `${out}…`;
    out += piece;
  }
  return out;
}

/** A fenced code block whose fence is longer than any backtick run inside, so it cannot be closed early. */
export function fence(content: string, info = ''): string {
  let longest = 0;
  for (const run of content.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const marker = '`'.repeat(Math.max(3, longest + 1));
  const body = content.endsWith('\n') ? content : `${content}\n`;
  return `${marker}${info}\n${body}${marker}`;
}

/** A GFM table; cells must already be escaped with {@link escapeInline}. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}
