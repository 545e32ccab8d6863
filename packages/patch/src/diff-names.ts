// How `git apply` reads a file name out of a diff header line, ported from git's apply.c
// (find_name*, git_header_name, guess_p_value and their helpers) so that the checker sees
// the very names git will write. Texts here are byte strings: one character per byte of the
// UTF-8 diff (latin1), as git reads them, so every length and offset matches git's.

const termSpace = 1;
export const termTab = 2;

/** C's isspace in the C locale. */
export const isSpace = (c: string | undefined) =>
  c === ' ' || c === '\t' || c === '\n' || c === '\v' || c === '\f' || c === '\r';
const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';

/** Length of the line at `pos`, its newline included; 0 at the end. */
export function lineLength(s: string, pos: number): number {
  if (pos >= s.length) return 0;
  const newline = s.indexOf('\n', pos);
  return newline === -1 ? s.length - pos : newline - pos + 1;
}

/** `/dev/null` followed by white space: the missing side of a creation or deletion. */
export const isDevNull = (s: string, pos: number) => s.startsWith('/dev/null', pos) && isSpace(s[pos + 9]);

/**
 * Reads a C-quoted name starting at the `"` at `pos` (git's unquote_c_style): `\a \b \f \n
 * \r \t \v \\ \"` and three-digit octal bytes; anything else fails. Like git, the quoted
 * text may run over line ends. The name stops at a NUL byte, as git's C strings do.
 */
function unquote(s: string, pos: number): { name: string; end: number } | undefined {
  if (s[pos] !== '"') return undefined;
  const escapes: Record<string, string> = {
    a: '\x07',
    b: '\b',
    f: '\f',
    n: '\n',
    r: '\r',
    t: '\t',
    v: '\v',
    '\\': '\\',
    '"': '"',
  };
  let out = '';
  let i = pos + 1;
  for (;;) {
    let j = i;
    while (j < s.length && s[j] !== '"' && s[j] !== '\\') j += 1;
    out += s.slice(i, j);
    if (j >= s.length) return undefined;
    if (s[j] === '"') return { name: out.split('\0')[0] ?? '', end: j + 1 };
    const c = s[j + 1] ?? '';
    if (c in escapes) {
      out += escapes[c];
      i = j + 2;
    } else if (/^[0-3][0-7][0-7]$/.test(s.slice(j + 1, j + 4))) {
      out += String.fromCharCode(parseInt(s.slice(j + 1, j + 4), 8));
      i = j + 4;
    } else {
      return undefined;
    }
  }
}

/** Collapses runs of `/`, as git does before using a name. */
const squash = (name: string | undefined) => name?.replace(/\/{2,}/g, '/');

const terminates = (c: string, terminate: number) =>
  !((c === ' ' && !(terminate & termSpace)) || (c === '\t' && !(terminate & termTab)));

function findNameGnu(s: string, pos: number, p: number): string | undefined {
  const quoted = unquote(s, pos);
  if (quoted === undefined) return undefined;
  let cp = 0;
  for (let left = p; left > 0; left -= 1) {
    const slash = quoted.name.indexOf('/', cp);
    if (slash === -1) return undefined;
    cp = slash + 1;
  }
  return squash(quoted.name.slice(cp));
}

function findNameCommon(
  s: string,
  pos: number,
  def: string | undefined,
  p: number,
  end: number | undefined,
  terminate: number,
): string | undefined {
  let start = p === 0 ? pos : undefined;
  let left = p;
  let i = pos;
  while (i !== end) {
    const c = s[i];
    if (end === undefined) {
      if (c === undefined || c === '\n') break;
      if (isSpace(c) && terminates(c, terminate)) break;
    }
    i += 1;
    if (c === '/') {
      left -= 1;
      if (left === 0) start = i;
    }
  }
  if (start === undefined || i === start) return squash(def);
  // Git prefers the shorter name when the other only adds to it (`file.orig`).
  if (def !== undefined && def.length < i - start && s.startsWith(def, start)) return squash(def);
  return squash(s.slice(start, i));
}

/** The name on a git header line (`---`, `+++`, `rename to`, ...), `p` leading parts removed. */
export function findName(
  s: string,
  pos: number,
  def: string | undefined,
  p: number,
  terminate: number,
): string | undefined {
  if (s[pos] === '"') {
    const name = findNameGnu(s, pos, p);
    if (name !== undefined) return name;
  }
  return findNameCommon(s, pos, def, p, undefined, terminate);
}

/** The name on a traditional `---` / `+++` line, a trailing timestamp left out. */
export function findNameTraditional(s: string, pos: number, def: string | undefined, p: number): string | undefined {
  if (s[pos] === '"') {
    const name = findNameGnu(s, pos, p);
    if (name !== undefined) return name;
  }
  const newline = s.indexOf('\n', pos);
  const len = (newline === -1 ? s.length : newline) - pos;
  const stamp = timestampLength(s.slice(pos, pos + len));
  if (stamp === 0) return findNameCommon(s, pos, def, p, undefined, termTab);
  return findNameCommon(s, pos, def, p, pos + len - stamp, 0);
}

/** git's guess of `-p`: 0 when a traditional name has no `/` at all, else no guess (-1). */
export function guessStrip(s: string, pos: number): number {
  if (isDevNull(s, pos)) return -1;
  const name = findNameTraditional(s, pos, undefined, 0);
  if (name === undefined) return -1;
  return name.includes('/') ? -1 : 0;
}

/** Index after `p` leading parts of `str` from `start` (git's skip_tree_prefix), or undefined. */
function skipTreePrefix(p: number, str: string, start: number, len: number): number | undefined {
  if (p === 0) return len > 0 && str[start] === '/' ? undefined : start;
  let slashes = p;
  for (let i = 0; i < len; i += 1) {
    if (str[start + i] === '/') {
      slashes -= 1;
      if (slashes <= 0) return i === 0 ? undefined : start + i + 1;
    }
  }
  return undefined;
}

/**
 * The name both sides of a `diff --git` line agree on (git_header_name), used when no other
 * header names the file; undefined when they differ or cannot be told apart. `legacy`:
 * as git before 2.44, which gave up at a space that ends a directory name (`a/x /f b/x /f`).
 */
export function gitHeaderName(
  p: number,
  s: string,
  lineStart: number,
  lineLen: number,
  legacy: boolean,
): string | undefined {
  const line = lineStart + 'diff --git '.length;
  const lineEnd = lineStart + lineLen;
  if (s[line] === '"') {
    const first = unquote(s, line);
    if (first === undefined) return undefined;
    const cp = skipTreePrefix(p, first.name, 0, first.name.length);
    if (cp === undefined) return undefined;
    const name = first.name.slice(cp);
    let second = first.end;
    while (second < lineEnd && isSpace(s[second])) second += 1;
    if (lineEnd <= second) return undefined;
    if (s[second] === '"') {
      const other = unquote(s, second);
      if (other === undefined) return undefined;
      const np = skipTreePrefix(p, other.name, 0, other.name.length);
      return np !== undefined && other.name.slice(np) === name ? name : undefined;
    }
    const np = skipTreePrefix(p, s, second, lineEnd - second);
    if (np === undefined || lineEnd - np !== name.length || s.slice(np, np + name.length) !== name) return undefined;
    return name;
  }
  const name = skipTreePrefix(p, s, line, lineEnd - line);
  if (name === undefined) return undefined;
  // An unquoted first name: a `"` can only start the second one.
  for (let second = name; second < lineEnd; second += 1) {
    if (s[second] !== '"') continue;
    const other = unquote(s, second);
    if (other === undefined) return undefined;
    const np = skipTreePrefix(p, other.name, 0, other.name.length);
    if (np === undefined) return undefined;
    const len = other.name.length - np;
    if (len < second - name && s.slice(name, name + len) === other.name.slice(np, np + len) && isSpace(s[name + len]))
      return other.name.slice(np);
    return undefined;
  }
  // Both unquoted: accept a name only if it shows up twice, in exactly the same form.
  const newline = s.indexOf('\n', name);
  if (newline === -1) return undefined;
  const rest = newline - name;
  for (let len = 0; ; len += 1) {
    const c = s[name + len];
    if (c === undefined || c === '\n') return undefined;
    if (c !== '\t' && c !== ' ') continue;
    if (s[name + len + 1] === undefined) return undefined;
    const second = skipTreePrefix(p, s, name + len + 1, rest - (len + 1));
    if (second === undefined) {
      if (legacy) return undefined;
      continue;
    }
    if (s[second + len] === '\n' && s.slice(name, name + len) === s.slice(second, second + len))
      return s.slice(name, name + len);
  }
}

/** Does a traditional name line end in GNU diff's epoch timestamp (a creation or deletion)? */
export function hasEpochTimestamp(s: string, pos: number): boolean {
  const newline = s.indexOf('\n', pos);
  const line = s.slice(pos, newline === -1 ? s.length : newline);
  const tab = line.lastIndexOf('\t');
  if (tab === -1) return false;
  let stamp = s.slice(pos + tab + 1);
  let epochHour: number;
  if (stamp.startsWith('1969-12-31 ')) epochHour = 24;
  else if (stamp.startsWith('1970-01-01 ')) epochHour = 0;
  else return false;
  stamp = stamp.slice(11);
  const match = /^([0-2][0-9]):([0-5][0-9]):00(\.0+)? ([-+])([0-2][0-9]:?[0-5][0-9])\n/.exec(stamp);
  if (!match) return false;
  const zone = match[5] ?? '';
  let offset = zone.includes(':')
    ? Number(zone.slice(0, 2)) * 60 + Number(zone.slice(3))
    : Math.trunc(Number(zone) / 100) * 60 + (Number(zone) % 100);
  if (match[4] === '-') offset = -offset;
  return Number(match[1]) * 60 + Number(match[2]) - offset === epochHour * 60;
}

/** Length of a trailing `2010-07-05 19:41:17.620000023 -0500`-style timestamp, with the space or tab before it. */
function timestampLength(t: string): number {
  const len = t.length;
  let end = len;
  if (!isDigit(t[end - 1])) return 0;
  let n = saneZone(t, end) || colonZone(t, end);
  end -= n;
  n = shortTime(t, end) || fractionalTime(t, end);
  end -= n;
  n = dateLength(t, end);
  if (n === 0) return 0;
  end -= n;
  if (end === 0) return 0;
  if (t[end - 1] === '\t') return len - (end - 1);
  if (t[end - 1] !== ' ') return 0;
  // Whitespace damage: all the spaces before the date go.
  let spaces = end;
  while (spaces > 0 && t[spaces - 1] === ' ') spaces -= 1;
  return len - spaces;
}

const digitsAt = (t: string, pattern: string, at: number) =>
  [...pattern].every((p, i) => (p === 'd' ? isDigit(t[at + i]) : t[at + i] === p));

function saneZone(t: string, len: number): number {
  if (len < 6 || t[len - 6] !== ' ' || (t[len - 5] !== '+' && t[len - 5] !== '-')) return 0;
  for (let i = len - 4; i < len; i += 1) if (!isDigit(t[i])) return 0;
  return 6;
}

function colonZone(t: string, len: number): number {
  if (len < 7 || t[len - 3] !== ':') return 0;
  const tz = len - 7;
  if (t[tz] !== ' ' || (t[tz + 1] !== '+' && t[tz + 1] !== '-')) return 0;
  return digitsAt(t, 'dd:dd', tz + 2) ? 7 : 0;
}

function shortTime(t: string, len: number): number {
  if (len < 9 || t[len - 3] !== ':') return 0;
  return digitsAt(t, ' dd:dd:dd', len - 9) ? 9 : 0;
}

function fractionalTime(t: string, len: number): number {
  if (len === 0 || !isDigit(t[len - 1])) return 0;
  let p = len - 1;
  while (p > 0 && isDigit(t[p])) p -= 1;
  if (t[p] !== '.') return 0;
  const n = shortTime(t, p);
  return n === 0 ? 0 : len - p + n;
}

function dateLength(t: string, len: number): number {
  if (len < 8 || t[len - 3] !== '-') return 0;
  let date = len - 8;
  if (!digitsAt(t, 'dd-dd-dd', date)) return 0;
  if (date >= 2 && isDigit(t[date - 1]) && isDigit(t[date - 2])) date -= 2;
  return len - date;
}
