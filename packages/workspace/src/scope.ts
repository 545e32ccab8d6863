import { chmod, lstat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import picomatch from 'picomatch';

/**
 * What a job may touch (scope control), as gitignore-style patterns:
 * - `exclude`: physically absent from the working copy (sparse checkout);
 * - `read`: present but read-only (`chmod a-w`);
 * - everything else: writable.
 *
 * Limits: excluded files are absent from the disk, not from git's object store, so an
 * agent that runs `git show HEAD:<path>` can still read them (keep real secrets out of the
 * repository); and root ignores file modes. The commit therefore leaves out-of-scope
 * changes out, and `Workspace.outOfScopeChanges` reports them.
 */
export interface Scope {
  exclude?: string[];
  read?: string[];
}

/** Files and directories made read-only in a copy, relative to it; kept to undo it later. */
export interface ReadOnlyPaths {
  files: string[];
  dirs: string[];
}

/** Checks scope patterns; they end up in git's line-based sparse-checkout file. */
export function checkScope(scope: Scope | undefined): void {
  for (const pattern of [...(scope?.exclude ?? []), ...(scope?.read ?? [])]) {
    // eslint-disable-next-line no-control-regex -- a newline would smuggle in a second pattern
    if (/[\u0000-\u001f\u007f]/.test(pattern)) {
      throw new CodefleetError(
        'workspace_failed',
        `scope pattern ${JSON.stringify(pattern)} contains a control character`,
        {
          verdict: 'permanent',
        },
      );
    }
  }
}

/**
 * Non-cone sparse-checkout patterns that check out everything except `exclude`; `undefined`
 * when nothing is excluded (sparse checkout off).
 */
export function sparsePatterns(exclude: readonly string[] | undefined): string[] | undefined {
  const patterns = (exclude ?? []).map((p) => p.trim()).filter((p) => p !== '' && !p.startsWith('#'));
  if (patterns.length === 0) return undefined;
  // An exclude entry `!x` re-includes x, so the negations cancel out; a leading `-` is
  // escaped so the pattern cannot be read as an option of `git sparse-checkout set`.
  const include = (p: string) => (p.startsWith('-') ? `\\${p}` : p);
  return ['/*', ...patterns.map((p) => (p.startsWith('!') ? include(p.slice(1)) : `!${p}`))];
}

/**
 * A gitignore-style matcher over repository-relative paths: a pattern without a slash
 * matches a name at any depth, a leading or inner slash anchors it at the root, a trailing
 * slash matches directories only, a match on a directory covers everything below it, and
 * `!pattern` re-includes; the last matching pattern wins.
 */
export function createScopeMatcher(patterns: readonly string[]): (path: string) => boolean {
  const rules = patterns
    .map((raw) => raw.trim())
    .filter((raw) => raw !== '' && !raw.startsWith('#'))
    .map((raw) => {
      const negated = raw.startsWith('!');
      let pattern = negated ? raw.slice(1) : raw;
      const dirOnly = pattern.endsWith('/');
      pattern = pattern.replace(/\/+$/, '');
      const anchored = pattern.includes('/');
      pattern = pattern.replace(/^\/+/, '');
      return { negated, dirOnly, test: picomatch(pattern, { dot: true, basename: !anchored }) };
    });
  return (path) => {
    const parts = path.split('/');
    let matched = false;
    for (const rule of rules) {
      // The path itself (a file: not for directory-only rules), then each parent directory.
      let hit = !rule.dirOnly && rule.test(path);
      for (let depth = 1; !hit && depth < parts.length; depth += 1) hit = rule.test(parts.slice(0, depth).join('/'));
      if (hit) matched = !rule.negated;
    }
    return matched;
  };
}

/**
 * Which of the tracked `files` the `read` patterns make read-only, plus every directory all
 * of whose tracked files are read-only: a read-only file in a writable directory can still
 * be replaced by rename (`sed -i`, most editors), a read-only directory stops that.
 */
export function readOnlyPaths(files: readonly string[], read: readonly string[] | undefined): ReadOnlyPaths {
  if (read === undefined || read.length === 0) return { files: [], dirs: [] };
  const matches = createScopeMatcher(read);
  const readOnlyFiles: string[] = [];
  const allDirs = new Set<string>();
  const mixedDirs = new Set<string>();
  for (const file of files) {
    const readOnly = matches(file);
    if (readOnly) readOnlyFiles.push(file);
    for (let dir = dirname(file); dir !== '.'; dir = dirname(dir)) {
      allDirs.add(dir);
      if (!readOnly) mixedDirs.add(dir);
    }
  }
  const dirs = [...allDirs].filter((dir) => !mixedDirs.has(dir)).sort();
  return { files: readOnlyFiles, dirs };
}

/** Removes write permission (`chmod a-w`) from `paths` under `root`; missing paths are skipped. */
export async function makeReadOnly(root: string, paths: ReadOnlyPaths): Promise<void> {
  // Files first: once a directory is read-only nothing inside needs changing anyway, but
  // chmod needs only ownership, so the order is about clarity, not permission.
  for (const rel of [...paths.files, ...paths.dirs]) await changeMode(join(root, rel), (mode) => mode & ~0o222);
}

/** Gives the owner write permission back on `paths` (undoes {@link makeReadOnly}). */
export async function restoreWritable(root: string, paths: ReadOnlyPaths): Promise<void> {
  for (const rel of [...paths.dirs, ...paths.files]) await changeMode(join(root, rel), (mode) => mode | 0o200);
}

async function changeMode(path: string, next: (mode: number) => number): Promise<void> {
  let mode: number;
  try {
    const info = await lstat(path);
    // chmod follows symlinks, and a tracked symlink may point outside the copy.
    if (info.isSymbolicLink()) return;
    mode = info.mode & 0o7777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // excluded by sparse checkout, or deleted
    throw error;
  }
  await chmod(path, next(mode));
}
