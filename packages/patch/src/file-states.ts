import { chmod, lstat, mkdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { PathRefused, resolveInside } from './paths.js';

/** A file as it was before the engine wrote it: its bytes and mode, or that it was not there. */
type FileState =
  | { path: string; rel: string; kind: 'file'; bytes: Buffer; mode: number }
  | { path: string; rel: string; kind: 'missing'; existingParent: string };

/**
 * What the files a patch writes looked like before, so that a failed step can put them
 * back byte for byte: a 3-way merge that stopped with conflicts, a rollback of files git
 * does not track (ignored ones). Paths are relative to the root and were checked inside
 * the workspace before they are remembered; a path is remembered once, at its first write.
 * Files only: a directory the patch deletes is not kept.
 */
export class FileStates {
  private readonly states = new Map<string, FileState>();

  constructor(private readonly root: string) {}

  /** Remembers `paths` (relative to the root) not remembered yet. */
  async remember(paths: readonly string[]): Promise<void> {
    for (const rel of paths) {
      const path = join(this.root, rel);
      if (this.states.has(path)) continue;
      const info = await lstat(path).catch(() => undefined);
      if (info?.isFile()) {
        this.states.set(path, { path, rel, kind: 'file', bytes: await readFile(path), mode: info.mode & 0o7777 });
      } else if (info === undefined) {
        let parent = dirname(path);
        while (
          parent.length > this.root.length &&
          !(await lstat(parent).then(
            () => true,
            () => false,
          ))
        )
          parent = dirname(parent);
        this.states.set(path, { path, rel, kind: 'missing', existingParent: parent });
      }
      // A directory or anything else is not a file the engine writes over; nothing to keep.
    }
  }

  /**
   * Puts every remembered file back; removes those that were not there and the directories
   * made for them. A path that now leads out of the workspace (a directory on the way
   * replaced by a symlink since) is left alone: nothing is removed or written through it.
   */
  async restore(): Promise<void> {
    for (const state of this.states.values()) {
      try {
        await resolveInside(this.root, state.rel);
      } catch (error) {
        if (error instanceof PathRefused) continue;
        throw error;
      }
      // Never through what now stands at the path: remove it, then write.
      await rm(state.path, { force: true, recursive: true });
      if (state.kind === 'file') {
        await mkdir(dirname(state.path), { recursive: true });
        await writeFile(state.path, state.bytes, { flag: 'wx' });
        await chmod(state.path, state.mode);
        continue;
      }
      for (let dir = dirname(state.path); dir.length > state.existingParent.length; dir = dirname(dir)) {
        if (
          !(await rmdir(dir).then(
            () => true,
            () => false,
          ))
        )
          break;
      }
    }
  }
}
