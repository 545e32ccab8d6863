import { lstat, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, posix, relative, resolve, sep } from 'node:path';

/** Why a path was refused. */
export class PathRefused extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`path ${JSON.stringify(path.slice(0, 200))} refused: ${reason}`);
    this.name = 'PathRefused';
  }
}

const within = (root: string, path: string) => {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

const exists = (path: string) =>
  lstat(path).then(
    () => true,
    () => false,
  );

/**
 * Resolves `path` (relative, from a patch) to an absolute path inside `root`, or throws
 * {@link PathRefused}: empty or NUL-containing paths, absolute paths, `..` that leaves the
 * workspace, anything in `.git`, and symlinks anywhere on the way whose real location is
 * outside the workspace (checked on the deepest part that exists, so a file that does not
 * exist yet cannot be created through a linked directory either). `root` must be a real
 * path (no symlinks in it).
 */
export async function resolveInside(root: string, path: string): Promise<string> {
  if (typeof path !== 'string' || path.trim() === '') throw new PathRefused(String(path), 'empty');
  if (path.includes('\0')) throw new PathRefused(path, 'contains NUL');
  if (isAbsolute(path) || /^[A-Za-z]:/.test(path) || path.startsWith('\\') || path.startsWith('~'))
    throw new PathRefused(path, 'absolute paths are not allowed');
  const normal = posix.normalize(path.replaceAll('\\', '/'));
  if (normal === '..' || normal.startsWith('../')) throw new PathRefused(path, 'leaves the workspace');
  if (normal.split('/').some((part) => part.toLowerCase() === '.git')) throw new PathRefused(path, 'inside .git');
  const absolute = resolve(root, normal);
  if (!within(root, absolute)) throw new PathRefused(path, 'leaves the workspace');
  // `.`, `a/..`: the workspace itself is never a target (deleting or renaming it).
  if (absolute === root) throw new PathRefused(path, 'is the workspace itself');
  // The deepest existing part decides where a write really lands.
  let probe = absolute;
  while (probe !== root && !(await exists(probe))) probe = dirname(probe);
  const real = await realpath(probe).catch(() => undefined);
  if (real === undefined) throw new PathRefused(path, 'a dangling symlink is on the way');
  if (!within(root, real)) throw new PathRefused(path, `a symlink on the way leads outside the workspace (${real})`);
  if (
    relative(root, real)
      .split(sep)
      .some((part) => part.toLowerCase() === '.git')
  )
    throw new PathRefused(path, 'a symlink on the way leads into .git');
  return absolute;
}

/** Protected file patterns: matched against the file name. */
export const defaultProtected = ['.env*', '*credentials*', '*.key', '*.pem'] as const;

/** True when `path`'s file name matches one of `patterns` (`*` wildcards, case-insensitive). */
export function isProtected(path: string, patterns: readonly string[]): boolean {
  const name = basename(path.replaceAll('\\', '/')).toLowerCase();
  return patterns.some((pattern) => {
    const regex = new RegExp(
      `^${pattern
        .toLowerCase()
        .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
        .replaceAll('*', '.*')}$`,
    );
    return regex.test(name);
  });
}
