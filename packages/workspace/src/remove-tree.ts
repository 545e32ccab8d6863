import { chmod, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * `rm -rf path`, also when the tree holds read-only directories (read scope, or an agent
 * that ran chmod): on EACCES/EPERM every directory is made owner-writable and it tries again.
 */
export async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM') throw error;
    await makeDirsWritable(path);
    await rm(path, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
  }
}

async function makeDirsWritable(dir: string): Promise<void> {
  // Owner rwx is what unlinking entries and descending needs; symlinks are never followed.
  await chmod(dir, 0o700).catch(() => undefined);
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (entry.isDirectory()) await makeDirsWritable(join(dir, entry.name));
  }
}
