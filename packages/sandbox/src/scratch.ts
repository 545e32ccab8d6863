import { lstat, mkdir, realpath } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isWithin } from './host.js';
import type { SandboxMount } from './types.js';

/**
 * The mounts that give one run its scratch directories (see `SandboxRunOptions.scratch`):
 * for each path inside one of the run's read-only paths, an empty directory of the run's own
 * (under `runDir`, removed with it) shown there writable. Nothing written there reaches the
 * copy, and the next run starts from empty again.
 *
 * A mount needs a mount point, and a read-only directory cannot get one inside the run: a
 * missing one is made here, empty, on the host (so `node_modules/.vite-temp` appears, empty,
 * beside the installed packages; installs replace the directory whole anyway). A path that is
 * there but not a plain directory (a symlink an install script made, a file) is left as it is.
 * `readOnly` holds real paths; paths outside them need no scratch and get none.
 */
export async function scratchMounts(
  paths: readonly string[] | undefined,
  readOnly: readonly string[],
  runDir: string,
): Promise<SandboxMount[]> {
  const mounts: SandboxMount[] = [];
  for (const path of paths ?? []) {
    const parent = await realpath(dirname(path)).catch(() => undefined);
    if (parent === undefined) continue;
    const target = join(parent, basename(path));
    if (!readOnly.some((root) => root !== target && isWithin(root, target))) continue;
    if (mounts.some((mount) => mount.target === target) || !(await mountPoint(target))) continue;
    const source = join(runDir, 'scratch', String(mounts.length));
    await mkdir(source, { recursive: true });
    mounts.push({ source, target, writable: true });
  }
  return mounts;
}

// Whether `path` is a plain directory, made empty when it was missing.
async function mountPoint(path: string): Promise<boolean> {
  const info = await lstat(path).catch(() => undefined);
  if (info !== undefined) return info.isDirectory();
  await mkdir(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  return (await lstat(path)).isDirectory();
}
