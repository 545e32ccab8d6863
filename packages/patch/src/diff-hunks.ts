// A diff's hunks and binary patches measured the way `git apply` measures them (apply.c's
// parse_fragment and parse_binary): pure functions of the text, for diff-headers' patch loop.
import { lineLength } from './diff-names.js';
/** `@@ -a,b +c,d @@`: the line counts, or undefined when the line is no hunk header. */
export function fragmentHeader(
  s: string,
  pos: number,
  len: number,
): { oldLines: number; newLines: number; end: number } | undefined {
  if (len === 0 || s[pos + len - 1] !== '\n') return undefined;
  const range = (at: number, expect: string) => {
    const match = /^(\d+)(?:,(\d+))?/.exec(s.slice(at, pos + len));
    if (!match || !s.startsWith(expect, at + match[0].length) || at + match[0].length + expect.length > pos + len)
      return undefined;
    return { lines: match[2] === undefined ? 1 : Number(match[2]), end: at + match[0].length + expect.length };
  };
  const before = range(pos + 4, ' +');
  const after = before && range(before.end, ' @@');
  return before && after ? { oldLines: before.lines, newLines: after.lines, end: after.end } : undefined;
}

export function parseHunk(s: string, pos: number): { size: number; oldLines: number; newLines: number } | undefined {
  let len = lineLength(s, pos);
  const header = fragmentHeader(s, pos, len);
  if (header === undefined) return undefined;
  let { oldLines, newLines } = header;
  let at = pos + len;
  let added = 0;
  let deleted = 0;
  for (; at < s.length; at += len) {
    if (oldLines === 0 && newLines === 0) break;
    len = lineLength(s, at);
    if (len === 0 || s[at + len - 1] !== '\n') return undefined;
    const c = s[at];
    if (c === '\n' || c === ' ') {
      oldLines -= 1;
      newLines -= 1;
    } else if (c === '-') {
      deleted += 1;
      oldLines -= 1;
    } else if (c === '+') {
      added += 1;
      newLines -= 1;
    } else if (c !== '\\' || len < 12 || !s.startsWith('\\ ', at)) return undefined;
  }
  if (oldLines !== 0 || newLines !== 0 || (added === 0 && deleted === 0)) return undefined;
  // A hunk that ends in an incomplete line: its `\ No newline` marker belongs to it.
  if (s.length - at > 12 && s.startsWith('\\ ', at)) at += lineLength(s, at);
  return { size: at - pos, oldLines: header.oldLines, newLines: header.newLines };
}

/** Bytes of a `GIT binary patch` body (forward hunk, optional reverse hunk), or undefined when corrupt. */
export function parseBinary(s: string, pos: number): number | undefined {
  const hunk = (at: number): number | undefined | 0 => {
    const first = lineLength(s, at);
    if (!/^(delta|literal) /.test(s.slice(at, at + first))) return 0;
    let used = first;
    for (let line = at + first; ;) {
      const len = lineLength(s, line);
      used += len;
      if (len === 1) return used;
      const width = s.charCodeAt(line);
      const bytes = width >= 65 && width <= 90 ? width - 64 : width >= 97 && width <= 122 ? width - 96 + 26 : 0;
      const most = Math.floor((len - 2) / 5) * 4;
      if (len < 7 || (len - 2) % 5 !== 0 || bytes === 0 || most < bytes || bytes <= most - 4) return undefined;
      line += len;
    }
  };
  const forward = hunk(pos);
  if (!forward) return undefined;
  const reverse = hunk(pos + forward);
  if (reverse === undefined) return undefined;
  return forward + (reverse || 0);
}
