import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temporary directory that removes itself with `dispose()`. */
export interface TempDir {
  readonly path: string;
  dispose(): Promise<void>;
}

/** Creates a fresh directory under the OS temp dir, named `codefleet-<prefix>-XXXXXX`. */
export async function createTempDir(prefix = 'test'): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), `codefleet-${prefix}-`));
  return {
    path,
    // maxRetries: git and SQLite may still be closing files when a test ends.
    dispose: () => rm(path, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 }),
  };
}
