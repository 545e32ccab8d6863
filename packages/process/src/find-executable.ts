import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/**
 * Where `file` would be started from, or undefined when it cannot be: a bare name is
 * looked up on `path` (a PATH value), a path is taken relative to `cwd`. For checks such as
 * `codefleet doctor`; runProcess itself reports a program that cannot start.
 */
export async function findExecutable(file: string, cwd: string, path: string | undefined): Promise<string | undefined> {
  const candidates = file.includes('/')
    ? [isAbsolute(file) ? file : resolve(cwd, file)]
    : (path ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(isAbsolute(dir) ? dir : resolve(cwd, dir), file));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Next directory.
    }
  }
  return undefined;
}
