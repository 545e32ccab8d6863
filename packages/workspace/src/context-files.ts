import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { CodefleetError } from '@codefleet/core';

/** Which context files were written, and which were left alone because the repo tracks them. */
export interface ContextResult {
  written: string[];
  skipped: string[];
}

/**
 * Checks context paths: relative, normalised, inside the copy and outside `.git`. They come
 * from the pipeline, but a bad one would otherwise write anywhere on the host.
 */
export function checkContextPaths(context: Record<string, string> | undefined): void {
  for (const path of Object.keys(context ?? {})) {
    const normal = posix.normalize(path);
    const bad =
      path === '' ||
      path.includes('\0') ||
      path.includes('\\') ||
      path.startsWith('/') ||
      normal !== path ||
      normal.split('/').some((part) => part === '..' || part === '.' || part.toLowerCase() === '.git');
    if (bad) {
      throw new CodefleetError(
        'workspace_failed',
        `context path ${JSON.stringify(path)} must be a plain relative path inside the copy`,
        {
          verdict: 'permanent',
        },
      );
    }
  }
}

/**
 * Writes the agent's context files (`.codefleet/task.md`, `CLAUDE.md`, ...) into the copy.
 * A path the repository already tracks is skipped: the repo's own `CLAUDE.md` is the
 * project's instructions, and overwriting it would also put our text into the commit.
 * `tracked` must hold every tracked path among the context paths and their parents.
 */
export async function writeContextFiles(
  dir: string,
  context: Record<string, string> | undefined,
  tracked: ReadonlySet<string>,
): Promise<ContextResult> {
  const result: ContextResult = { written: [], skipped: [] };
  for (const [path, content] of Object.entries(context ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
    // A tracked parent is a file or symlink in the repo: writing below it would fail, or
    // follow the link out of the copy.
    const parents = path
      .split('/')
      .slice(0, -1)
      .map((_, i, parts) => parts.slice(0, i + 1).join('/'));
    if (tracked.has(path) || parents.some((parent) => tracked.has(parent))) {
      result.skipped.push(path);
      continue;
    }
    const target = join(dir, path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, content);
    result.written.push(path);
  }
  return result;
}

/** The context paths and all their parent directories: what `tracked` must be checked for. */
export function contextCandidates(context: Record<string, string> | undefined): string[] {
  const candidates = new Set<string>();
  for (const path of Object.keys(context ?? {})) {
    const parts = path.split('/');
    for (let i = 1; i <= parts.length; i += 1) candidates.add(parts.slice(0, i).join('/'));
  }
  return [...candidates].sort();
}
