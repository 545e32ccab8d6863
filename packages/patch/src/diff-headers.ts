// Which files a diff touches, read the way `git apply` reads it: its patch loop, header
// detection, git extended headers, traditional headers with git's `-p` guess, hunks counted
// line by line (a `---` inside a hunk is not a header) and binary patches. Ported from
// git's apply.c (parse_chunk, find_header, parse_git_diff_header, parse_fragment,
// parse_binary), so that a header git understands cannot slip past the checker; the
// engine also compares the result with git's own reading of the same file.
import {
  findName,
  findNameTraditional,
  gitHeaderName,
  guessStrip,
  hasEpochTimestamp,
  isDevNull,
  isSpace,
  lineLength,
  termTab,
} from './diff-names.js';
import { fragmentHeader, parseBinary, parseHunk } from './diff-hunks.js';

/** One file of a diff, as `git apply` would change it. */
export interface DiffFile {
  /** The file before the change (absent for a created file) and after it (absent for a deleted one). */
  oldPath?: string;
  newPath?: string;
  /** Every name its headers gave, those git then set aside included: all of them are checked. */
  paths: string[];
  /** The modes its headers give (`new file mode`, `old mode`, the index line's, ...), as written. */
  modes: string[];
  /** A binary change: its data (`GIT binary patch`), or only `Binary files ... differ`, which cannot be applied. */
  binary?: 'patch' | 'no-data';
}

/** The diff cannot be read the way git reads it: git would refuse it, or the checker cannot follow. */
export class DiffUnreadable extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'DiffUnreadable';
  }
}

interface Patch {
  isNew: number;
  isDelete: number;
  isRename: number;
  isCopy: number;
  oldName: string | undefined;
  newName: string | undefined;
  defName: string | undefined;
  oldMode: string | undefined;
  newMode: string | undefined;
  names: string[];
  modes: string[];
  binary: false | 'patch' | 'no-data';
}

interface State {
  s: string;
  /** `-p`: leading parts stripped from names; guessed once from the first traditional header. */
  strip: number;
  stripKnown: boolean;
  /** Read `diff --git` lines as git before 2.44 did; set when the two readings differ. */
  legacy: boolean;
  versionsDiffer: boolean;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The files `diff` (text, or the bytes git will read) touches, in order, as `git apply`
 * run at the top of the work tree reads them: with `-p<strip>` when `strip` is given, else
 * without `-p` (git's default and guess). Throws {@link DiffUnreadable} where git would
 * stop with an error, for a NUL byte, and for a name that is not UTF-8. An empty list: git
 * finds no patch in it.
 */
export function readDiff(diff: string | Uint8Array, options: { strip?: number } = {}): DiffFile[] {
  const bytes =
    typeof diff === 'string' ? Buffer.from(diff, 'utf8') : Buffer.from(diff.buffer, diff.byteOffset, diff.byteLength);
  let text = bytes.toString('latin1') + (bytes.at(-1) === 10 ? '' : '\n');
  if (text.includes('\0')) {
    // git reads names as C strings, cut at a NUL; file content may hold one. A NUL is let
    // through on a line that starts like a hunk line only, and read as another character:
    // a name that git then reads shorter is one the checker did not read, and is refused.
    const header = (line: string) => !/^[ +-]/.test(line) || /^(--- |\+\+\+ )/.test(line);
    if (text.split('\n').some((line) => line.includes('\0') && header(line)))
      throw new DiffUnreadable('the diff has a NUL byte outside the lines of a hunk');
    text = text.replaceAll('\0', '\x01');
  }
  const current = readWith(text, false, options.strip);
  if (!current.versionsDiffer) {
    if (current.error) throw current.error;
    return current.files;
  }
  // Where git versions read a header differently, what either reads is checked (and the
  // engine holds it against the installed git's own reading); refused only if both refuse.
  const legacy = readWith(text, true, options.strip);
  if (current.error && legacy.error) throw current.error;
  return [...(current.error ? [] : current.files), ...(legacy.error ? [] : legacy.files)];
}

function readWith(
  s: string,
  legacy: boolean,
  strip: number | undefined,
): { files: DiffFile[]; versionsDiffer: boolean; error?: DiffUnreadable } {
  const state: State = { s, strip: strip ?? 1, stripKnown: strip !== undefined, legacy, versionsDiffer: false };
  const files: DiffFile[] = [];
  try {
    for (let offset = 0; offset < s.length;) {
      const patch: Patch = {
        isNew: -1,
        isDelete: -1,
        isRename: 0,
        isCopy: 0,
        oldName: undefined,
        newName: undefined,
        defName: undefined,
        oldMode: undefined,
        newMode: undefined,
        names: [],
        modes: [],
        binary: false,
      };
      const used = parseChunk(state, offset, patch);
      if (used === undefined) break;
      files.push(toFile(patch));
      offset += used;
    }
  } catch (error) {
    if (!(error instanceof DiffUnreadable)) throw error;
    return { files, versionsDiffer: state.versionsDiffer, error };
  }
  return { files, versionsDiffer: state.versionsDiffer };
}

function toFile(patch: Patch): DiffFile {
  const decode = (name: string) => {
    try {
      return utf8.decode(Buffer.from(name, 'latin1'));
    } catch {
      throw new DiffUnreadable(`a file name in the diff is not UTF-8: ${JSON.stringify(name.slice(0, 100))}`);
    }
  };
  const paths = [
    ...new Set([...patch.names, patch.oldName, patch.newName].filter((n): n is string => n !== undefined).map(decode)),
  ];
  return {
    ...(patch.oldName === undefined || patch.isNew === 1 ? {} : { oldPath: decode(patch.oldName) }),
    ...(patch.newName === undefined || patch.isDelete === 1 ? {} : { newPath: decode(patch.newName) }),
    paths,
    modes: patch.modes,
    ...(patch.binary === false ? {} : { binary: patch.binary }),
  };
}

/** Bytes one patch takes from `offset`, or undefined where git's loop stops. */
function parseChunk(state: State, offset: number, patch: Patch): number | undefined {
  const header = findHeader(state, offset, patch);
  if (header === undefined) return undefined;
  const { s } = state;
  const body = header.start + header.size;
  let size = parseHunks(state, body, patch);
  if (size === 0) {
    const len = lineLength(s, body);
    if (s.slice(body, body + len) === 'GIT binary patch\n') {
      const used = parseBinary(s, body + len);
      // A corrupt binary patch ends git's loop, the patches before it still applied.
      if (used === undefined) return undefined;
      patch.binary = 'patch';
      size = used + len;
    } else if (
      len >= 8 &&
      s.slice(body + len - 8, body + len) === ' differ\n' &&
      ['Binary files ', 'Files '].some((h) => h.length < s.length - body && s.startsWith(h, body))
    ) {
      patch.binary = 'no-data';
      size = len;
    }
    const modeChange =
      patch.oldMode !== undefined &&
      patch.newMode !== undefined &&
      parseInt(patch.oldMode, 8) !== parseInt(patch.newMode, 8);
    const metadata = patch.isRename > 0 || patch.isCopy > 0 || patch.isNew > 0 || patch.isDelete !== 0 || modeChange;
    if (!patch.binary && !metadata) throw new DiffUnreadable('patch with only garbage (git refuses it)');
  }
  return header.start - offset + header.size + size;
}

function findHeader(state: State, from: number, patch: Patch): { start: number; size: number } | undefined {
  const { s } = state;
  for (let pos = from, len = 0; pos < s.length; pos += len) {
    len = lineLength(s, pos);
    if (len === 0) break;
    if (len < 6) continue;
    const size = s.length - pos;
    if (s.startsWith('@@ -', pos)) {
      if (fragmentHeader(s, pos, len) === undefined) continue;
      throw new DiffUnreadable('a hunk without a file header (git refuses it)');
    }
    if (size < len + 6) break;
    if (s.startsWith('diff --git ', pos)) {
      const headerSize = parseGitHeader(state, pos, len, patch);
      if (headerSize <= len) continue;
      return { start: pos, size: headerSize };
    }
    if (!s.startsWith('--- ', pos) || !s.startsWith('+++ ', pos + len)) continue;
    const next = lineLength(s, pos + len);
    if (size < next + 14 || !s.startsWith('@@ -', pos + len + next)) continue;
    parseTraditional(state, pos + 4, pos + len + 4, patch);
    return { start: pos, size: len + next };
  }
  return undefined;
}

function parseTraditional(state: State, first: number, second: number, patch: Patch): void {
  const { s } = state;
  if (!state.stripKnown) {
    let p = guessStrip(s, first);
    const q = guessStrip(s, second);
    if (p < 0) p = q;
    if (p >= 0 && p === q) {
      state.strip = p;
      state.stripKnown = true;
    }
  }
  let name: string | undefined;
  if (isDevNull(s, first)) {
    [patch.isNew, patch.isDelete] = [1, 0];
    name = patch.newName = findNameTraditional(s, second, undefined, state.strip);
  } else if (isDevNull(s, second)) {
    [patch.isNew, patch.isDelete] = [0, 1];
    name = patch.oldName = findNameTraditional(s, first, undefined, state.strip);
  } else {
    const firstName = findNameTraditional(s, first, undefined, state.strip);
    if (firstName !== undefined) patch.names.push(firstName);
    name = findNameTraditional(s, second, firstName, state.strip);
    if (hasEpochTimestamp(s, first)) {
      [patch.isNew, patch.isDelete] = [1, 0];
      patch.newName = name;
    } else if (hasEpochTimestamp(s, second)) {
      [patch.isNew, patch.isDelete] = [0, 1];
      patch.oldName = name;
    } else {
      patch.oldName = patch.newName = name;
    }
  }
  if (name === undefined) throw new DiffUnreadable('a ---/+++ header without a file name (git refuses it)');
}

type HeaderLine = (state: State, at: number, patch: Patch) => number;

const verifyName =
  (side: 'oldName' | 'newName'): HeaderLine =>
  (state, at, patch) => {
    const isNull = side === 'oldName' ? patch.isNew : patch.isDelete;
    const current = patch[side];
    if (current === undefined && !isNull) {
      patch[side] = findName(state.s, at, undefined, state.strip, termTab);
      if (patch[side] !== undefined) patch.names.push(patch[side]);
      return 0;
    }
    if (current !== undefined) {
      if (isNull) throw new DiffUnreadable('bad git diff: expected /dev/null (git refuses it)');
      if (findName(state.s, at, undefined, state.strip, termTab) !== current)
        throw new DiffUnreadable('bad git diff: inconsistent file names (git refuses it)');
    } else if (!isDevNull(state.s, at)) {
      throw new DiffUnreadable('bad git diff: expected /dev/null (git refuses it)');
    }
    return 0;
  };

/** strtoul(line, &end, 8) followed by white space, as git's parse_mode_line wants it. */
function readMode(s: string, at: number, patch: Patch, side: 'oldMode' | 'newMode'): void {
  let i = at;
  while (isSpace(s[i])) i += 1;
  const sign = s[i] === '+' || s[i] === '-' ? s[i] : '';
  if (sign) i += 1;
  const digits = i;
  while (s[i] !== undefined && s[i]! >= '0' && s[i]! <= '7') i += 1;
  if (i === digits || !isSpace(s[i])) throw new DiffUnreadable('invalid mode in the diff (git refuses it)');
  patch[side] = `${sign}${s.slice(digits, i)}`;
  patch.modes.push(patch[side]);
}

const renamed =
  (side: 'oldName' | 'newName', kind: 'isRename' | 'isCopy'): HeaderLine =>
  (state, at, patch) => {
    patch[kind] = 1;
    patch[side] = findName(state.s, at, undefined, state.strip > 0 ? state.strip - 1 : 0, 0);
    if (patch[side] !== undefined) patch.names.push(patch[side]);
    return 0;
  };

const headerLines: [string, HeaderLine][] = [
  ['@@ -', () => 1],
  ['--- ', verifyName('oldName')],
  ['+++ ', verifyName('newName')],
  [
    'old mode ',
    (state, at, patch) => {
      readMode(state.s, at, patch, 'oldMode');
      return 0;
    },
  ],
  [
    'new mode ',
    (state, at, patch) => {
      readMode(state.s, at, patch, 'newMode');
      return 0;
    },
  ],
  [
    'deleted file mode ',
    (state, at, patch) => {
      patch.isDelete = 1;
      patch.oldName = patch.defName;
      readMode(state.s, at, patch, 'oldMode');
      return 0;
    },
  ],
  [
    'new file mode ',
    (state, at, patch) => {
      patch.isNew = 1;
      patch.newName = patch.defName;
      readMode(state.s, at, patch, 'newMode');
      return 0;
    },
  ],
  ['copy from ', renamed('oldName', 'isCopy')],
  ['copy to ', renamed('newName', 'isCopy')],
  ['rename old ', renamed('oldName', 'isRename')],
  ['rename new ', renamed('newName', 'isRename')],
  ['rename from ', renamed('oldName', 'isRename')],
  ['rename to ', renamed('newName', 'isRename')],
  ['similarity index ', () => 0],
  ['dissimilarity index ', () => 0],
  [
    'index ',
    (state, at, patch) => {
      // `index <hex>..<hex>[ <mode>]`; git's search for `.` runs past the line end, as here.
      // The longest object name (SHA-256) is allowed, so a mode git reads is read here too.
      const { s } = state;
      const dots = s.indexOf('.', at);
      if (dots === -1 || s[dots + 1] !== '.' || dots - at > 64) return 0;
      const from = dots + 2;
      const newline = s.indexOf('\n', from);
      const eol = newline === -1 ? s.length : newline;
      let space = s.indexOf(' ', from);
      if (space === -1 || eol < space) space = eol;
      if (space - from > 64) return 0;
      if (s[space] === ' ') readMode(s, space + 1, patch, 'oldMode');
      return 0;
    },
  ],
  ['', () => 1],
];

/** Reads a `diff --git` header and its extended lines; returns their size in bytes. */
function parseGitHeader(state: State, pos: number, len: number, patch: Patch): number {
  const { s } = state;
  patch.isNew = 0;
  patch.isDelete = 0;
  const names = [false, true].map((legacy) => gitHeaderName(state.strip, s, pos, len, legacy));
  if (names[0] !== names[1]) state.versionsDiffer = true;
  patch.defName = names[state.legacy ? 1 : 0];
  if (patch.defName !== undefined) patch.names.push(patch.defName);
  let offset = len;
  for (let at = pos + len, l = 0; at < s.length; at += l, offset += l) {
    l = lineLength(s, at);
    if (l === 0 || s[at + l - 1] !== '\n') break;
    const [prefix, read] = headerLines.find(([p]) => l >= p.length && s.startsWith(p, at)) ?? ['', () => 1];
    const done = read(state, at + prefix.length, patch);
    const kinds = [patch.isDelete, patch.isNew, patch.isRename, patch.isCopy].filter((v) => v === 1).length;
    if (kinds > 1) throw new DiffUnreadable('inconsistent git diff header lines (git refuses it)');
    if (done > 0) break;
  }
  if (patch.oldName === undefined && patch.newName === undefined) {
    if (patch.defName === undefined) throw new DiffUnreadable('a git diff header without file names (git refuses it)');
    patch.oldName = patch.newName = patch.defName;
  }
  if ((patch.newName === undefined && !patch.isDelete) || (patch.oldName === undefined && !patch.isNew)) {
    throw new DiffUnreadable('a git diff header without file names (git refuses it)');
  }
  return offset;
}

/** Bytes of the hunks at `pos` (0 when none), following their line counts as git does. */
function parseHunks(state: State, pos: number, patch: Patch): number {
  const { s } = state;
  let at = pos;
  let oldTotal = 0;
  let newTotal = 0;
  let hunks = 0;
  while (s.length - at > 4 && s.startsWith('@@ -', at)) {
    const used = parseHunk(s, at);
    if (used === undefined)
      throw new DiffUnreadable('corrupt patch: a hunk does not match its line counts (git refuses it)');
    oldTotal += used.oldLines;
    newTotal += used.newLines;
    hunks += 1;
    at += used.size;
  }
  if (patch.isNew < 0 && (oldTotal > 0 || hunks > 1)) patch.isNew = 0;
  if (patch.isDelete < 0 && (newTotal > 0 || hunks > 1)) patch.isDelete = 0;
  if (patch.isNew > 0 && oldTotal > 0) throw new DiffUnreadable('a new file depends on old contents (git refuses it)');
  if (patch.isDelete > 0 && newTotal > 0)
    throw new DiffUnreadable('a deleted file still has contents (git refuses it)');
  return at - pos;
}
