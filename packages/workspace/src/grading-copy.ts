import { cp, lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import { removeTree } from './remove-tree.js';

/** A copy of a working copy's files for the verifier alone (see {@link Workspace.gradingCopy}). */
export interface GradingCopy {
  /** Absolute path: beside the working copy, `<copy>.grade`. */
  readonly dir: string;
  /** Removes it; safe to call twice. */
  remove(): Promise<void>;
}

/** Where the grading copy of the working copy at `copyDir` is made. */
export function gradingDir(copyDir: string): string {
  return `${copyDir}.grade`;
}

/**
 * Copies the working copy's files as they stand (ignored ones too: installed dependencies and
 * build output, so checks start warm) into `<copyDir>.grade`, without its `.git` link: a git
 * command there finds no repository, so nothing run there reaches the copy's index, branch or
 * objects. Symbolic links are copied as links, never followed; anything but a file, a
 * directory or a link (a FIFO an agent left) is left out. A directory left by an earlier
 * grade of this copy is replaced.
 */
export async function makeGradingCopy(copyDir: string): Promise<GradingCopy> {
  const dir = gradingDir(copyDir);
  await removeTree(dir);
  const gitLink = join(copyDir, '.git');
  try {
    await cp(copyDir, dir, {
      recursive: true,
      verbatimSymlinks: true,
      errorOnExist: true,
      filter: async (source) => {
        if (source === gitLink) return false;
        const stat = await lstat(source);
        return stat.isFile() || stat.isDirectory() || stat.isSymbolicLink();
      },
    });
  } catch (cause) {
    await removeTree(dir);
    throw new CodefleetError('workspace_failed', `could not copy the working copy for grading: ${String(cause)}`, {
      verdict: 'permanent',
      cause,
    });
  }
  return { dir, remove: () => removeTree(dir) };
}
