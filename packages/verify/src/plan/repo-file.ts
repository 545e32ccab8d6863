import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, open, readlink, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';

/**
 * What {@link readRepoFile} found. A `reason` names what is wrong with the file (its kind,
 * its size, an errno code), never its content: the reason may end up in a public comment.
 */
export type RepoFile =
  { status: 'read'; content: Buffer } | { status: 'missing' } | { status: 'refused'; reason: string };

/** Options of {@link readRepoFile}. */
export interface ReadRepoFileOptions {
  /** Larger files are refused, not cut: a half-read config or lockfile would mislead. */
  maxBytes: number;
}

// O_NOFOLLOW: a symlink as the last component fails (ELOOP) instead of being followed.
// O_NONBLOCK: opening a FIFO that replaced the file after the lstat returns at once.
const openFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const chunkBytes = 64 * 1024;

/**
 * Reads a file of a working copy that the repository (or the agent) controls, only when it
 * is a regular file really inside the copy: no symlink as the file or as any directory on
 * the way, no FIFO, device, socket or directory, no hard link shared with another path,
 * at most `maxBytes`. Without this, a committed `.codefleet.yml` that links to
 * `../../github-installation-token` or `/proc/self/environ` would be read, and a parse
 * error quoting it would publish a secret; a FIFO would hang the worker.
 *
 * The kind is checked twice, by path before opening (so a device is never opened) and on
 * the opened descriptor (so a swap in between is caught); on Linux the descriptor's path
 * is checked too, which also catches a parent directory swapped for a symlink.
 *
 * @param relativePath a path below `root` (`package.json`, `a/b.toml`); `..` is refused.
 */
export async function readRepoFile(
  root: string,
  relativePath: string,
  options: ReadRepoFileOptions,
): Promise<RepoFile> {
  const relative = insidePath(relativePath);
  const place = await locate(root, relative);
  if (place.status !== 'inside') return place;
  const byPath = await lstatOf(place.path);
  if ('status' in byPath) return byPath;
  const early = kindProblem(byPath) ?? sizeProblem(byPath, options.maxBytes);
  if (early !== undefined) return refused(early);

  let handle: FileHandle;
  try {
    handle = await open(place.path, openFlags);
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'ELOOP') return refused('is a symbolic link');
    if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'missing' };
    return refused(`cannot be opened (${code})`);
  }
  try {
    const opened = await handle.stat();
    const late = kindProblem(opened) ?? sizeProblem(opened, options.maxBytes);
    if (late !== undefined) return refused(late);
    if (!(await openedAt(handle, join(place.rootReal, relative)))) return refused('lies outside the working copy');
    const content = await readAtMost(handle, options.maxBytes);
    return content === undefined
      ? refused(`grew past ${options.maxBytes} bytes while being read`)
      : { status: 'read', content };
  } catch (error) {
    return refused(`cannot be read (${errnoOf(error)})`);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * True when `relativePath` is a regular file inside the copy (as {@link readRepoFile} would
 * accept it, size aside): for marker files whose presence alone decides something.
 */
export async function isRepoFile(root: string, relativePath: string): Promise<boolean> {
  const relative = insidePath(relativePath);
  const place = await locate(root, relative);
  if (place.status !== 'inside') return false;
  const info = await lstatOf(place.path);
  return !('status' in info) && kindProblem(info) === undefined;
}

function insidePath(relativePath: string): string {
  const relative = normalize(relativePath);
  if (isAbsolute(relativePath) || relative === '.' || relative === '..' || relative.startsWith(`..${sep}`)) {
    // A programming error: callers pass fixed names, never text from a job or a repository.
    throw new Error(`readRepoFile: ${relativePath} is not a path below the working copy`);
  }
  return relative;
}

type Place =
  { status: 'inside'; path: string; rootReal: string } | { status: 'missing' } | { status: 'refused'; reason: string };

/** Resolves the directories on the way and checks that none of them leaves the copy. */
async function locate(root: string, relative: string): Promise<Place> {
  let rootReal: string;
  try {
    rootReal = await realpath(root);
  } catch (error) {
    return refused(`cannot be reached: the working copy cannot be resolved (${errnoOf(error)})`);
  }
  const parent = dirname(relative);
  if (parent !== '.') {
    let parentReal: string;
    try {
      parentReal = await realpath(join(rootReal, parent));
    } catch (error) {
      const code = errnoOf(error);
      if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'missing' };
      return refused(`cannot be reached (${code})`);
    }
    if (parentReal !== join(rootReal, parent)) return refused('is below a symbolic link to a directory');
  }
  return { status: 'inside', path: join(rootReal, relative), rootReal };
}

async function lstatOf(path: string): Promise<Stats | RepoFile> {
  try {
    return await lstat(path);
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'missing' };
    return refused(`cannot be read (${code})`);
  }
}

function kindProblem(info: Stats): string | undefined {
  if (info.isSymbolicLink()) return 'is a symbolic link';
  if (info.isDirectory()) return 'is a directory';
  if (info.isFIFO()) return 'is a FIFO (named pipe)';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'is a device';
  if (info.isSocket()) return 'is a socket';
  if (!info.isFile()) return 'is not a regular file';
  // A hard link can make a file from outside the copy appear inside it; git never
  // checks out hard links, so a repository's own files have exactly one.
  if (info.nlink > 1) return 'has other hard links';
  return undefined;
}

function sizeProblem(info: Stats, maxBytes: number): string | undefined {
  return info.size > maxBytes ? `is ${info.size} bytes; at most ${maxBytes} are read` : undefined;
}

/** False when the descriptor's path (Linux: /proc/self/fd) is not `expected`; true where it cannot be known. */
async function openedAt(handle: FileHandle, expected: string): Promise<boolean> {
  let actual: string;
  try {
    actual = await readlink(`/proc/self/fd/${handle.fd}`);
  } catch {
    return true;
  }
  return actual === expected;
}

/** The whole file, or undefined when it has more than `maxBytes` (it grew after fstat). */
async function readAtMost(handle: FileHandle, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const buffer = Buffer.alloc(Math.min(chunkBytes, maxBytes + 1 - total));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, total);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
    if (total > maxBytes) return undefined;
  }
  return Buffer.concat(chunks, total);
}

function refused(reason: string): { status: 'refused'; reason: string } {
  return { status: 'refused', reason };
}

function errnoOf(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]+$/.test(code) ? code : 'unknown error';
}
