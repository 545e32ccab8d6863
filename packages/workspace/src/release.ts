import { removeAgentView } from './agent-view.js';
import { readLock, unlock, updateLock, type LockHolder } from './lock-file.js';
import type { OpenCopy } from './open-copy.js';
import { readState, writeState, type CopyPaths } from './pool.js';
import { restoreWritable } from './scope.js';
import { removeCopy } from './working-copy.js';

/** See `Workspace.release`; called once per workspace. */
export async function releaseCopy(copy: OpenCopy, opts: { keep?: boolean }): Promise<void> {
  const { ctx, paths, holder } = copy;
  await removeAgentView(paths.dir).catch(() => undefined);
  // Only while the lock is still ours: after a sweep freed it, another attempt of the
  // job may already be using a copy with this name.
  if (!(await holdsLock(paths, holder))) return;
  if (!paths.pooled && opts.keep !== true) {
    await removeCopy(ctx, paths);
  } else {
    // Writable again, so a person inspecting a kept copy, or clearing the cache, can
    // delete it without chmod; the next job applies its own scope anyway.
    const state = await readState(paths);
    await restoreWritable(paths.dir, state.readOnly);
    await writeState(paths, { ...state, readOnly: { files: [], dirs: [] } });
  }
  if (opts.keep === true) await updateLock(paths.lock, holder, { ...holder, kept: true });
  else await unlock(paths.lock, holder);
}

async function holdsLock(paths: CopyPaths, holder: LockHolder): Promise<boolean> {
  const state = await readLock(paths.lock);
  return state.kind === 'held' && state.holder.token === holder.token;
}
