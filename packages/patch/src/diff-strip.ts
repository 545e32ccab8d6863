// Which `-p` a diff needs. git strips one leading part of every name (`a/`, `b/`) unless
// told otherwise, so a diff made without prefixes (`git diff --no-prefix`, a model writing
// `--- src/a.ts`) would write `a.ts` at the top, or a new `src/new/b.ts` as `new/b.ts`.
import { lstat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DiffUnreadable, readDiff, type DiffFile } from './diff-headers.js';

/** First parts git and diff tools put before names: `a/` `b/`, git's mnemonic `i/ w/ c/ o/`, `diff -r old new`. */
const prefixes = new Set(['a', 'b', 'i', 'w', 'c', 'o', 'old', 'new', 'orig']);

const first = (name: string) => name.split('/')[0] ?? '';

function readable(diff: string | Uint8Array, strip: number): DiffFile[] | undefined {
  try {
    const files = readDiff(diff, { strip });
    return files.length > 0 ? files : undefined;
  } catch (error) {
    if (error instanceof DiffUnreadable) return undefined;
    throw error;
  }
}

/**
 * The `-p` the names themselves suggest: 1 when they carry prefixes (old and new names
 * differ in their first part, or it is `a`, `b`, ...), 0 when they do not (the same
 * `src/x.ts` on both sides, a new file under a directory of its own name), 1 when unsure.
 */
export function stripFromNames(diff: string | Uint8Array): 0 | 1 {
  const raw = readable(diff, 0);
  const one = readable(diff, 1);
  if (raw === undefined) return 1;
  if (one === undefined) return 0;
  if (samePaths(raw, one)) return 1;
  let prefixed = false;
  let bare = false;
  for (const file of raw) {
    const names = [file.oldPath, file.newPath].filter((n): n is string => n !== undefined);
    if (names.some((n) => prefixes.has(first(n)) && n.includes('/'))) prefixed = true;
    else if (names.length === 2 && first(names[0] ?? '') !== first(names[1] ?? '')) prefixed = true;
    else if (names.every((n) => n.includes('/'))) bare = true;
  }
  return bare && !prefixed ? 0 : 1;
}

/**
 * The `-p` to apply `diff` with inside `root`: the one under which more of the files it
 * changes exist (and more new files land in an existing directory); on a tie, what the
 * names suggest ({@link stripFromNames}). 1, git's default, when only it reads the diff.
 */
export async function chooseStrip(root: string, diff: string | Uint8Array): Promise<0 | 1> {
  const one = readable(diff, 1);
  const zero = readable(diff, 0);
  if (zero === undefined) return 1;
  if (one === undefined) return 0;
  if (samePaths(one, zero)) return 1;
  const [scoreOne, scoreZero] = await Promise.all([score(root, one), score(root, zero)]);
  if (scoreOne !== scoreZero) return scoreOne > scoreZero ? 1 : 0;
  return stripFromNames(diff);
}

/** Both readings name the same files (rename and copy lines alone read the same either way). */
const samePaths = (a: DiffFile[], b: DiffFile[]) =>
  JSON.stringify(a.map((f) => f.paths)) === JSON.stringify(b.map((f) => f.paths));

const exists = (path: string) =>
  lstat(path).then(
    () => true,
    () => false,
  );

/**
 * Files whose old version exists, plus new files whose directory exists. The workspace
 * root exists for every name: a new file it would hold is no evidence (stripping one part
 * of `docs/new.md`, in a directory not made yet, always "finds" a home for `new.md`).
 * Names are not trusted: only looked at.
 */
async function score(root: string, files: DiffFile[]): Promise<number> {
  let points = 0;
  for (const file of files) {
    const name = file.oldPath ?? file.newPath;
    if (name === undefined || name.startsWith('/') || name.split('/').includes('..')) continue;
    const where = file.oldPath === undefined ? dirname(name) : name;
    if (where !== '.' && (await exists(join(root, where)))) points += 1;
  }
  return points;
}
