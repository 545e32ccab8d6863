import { listMirrors } from './evict.js';
import type { Git } from './git.js';
import { withMirrorLock, type MirrorPaths } from './mirror.js';

// Mirror upkeep while a worker runs (the sweep at start did it only then): a mirror grew a
// work branch per job (refs/heads/*, left behind when its pool slot went on to the next job)
// and loose objects from every fetch and commit, and each git call in it slowed with them.

/** Work branches deleted per git call. */
const chunk = 100;

/**
 * In `mirror`, under its lock: deletes the work branches no working copy has checked out
 * (finished jobs'; a running job's branch is checked out in its copy, and git refuses to
 * delete that one anyway), drops registrations of copies that are gone, packs the refs, and
 * packs loose objects once there are more than a few hundred (`gc --auto`). Resolves how
 * many branches went. Objects only those branches reached stay until gc's prune expiry.
 */
export async function maintainMirror(
  settings: { git: Git; lockTimeoutMs: number },
  mirror: MirrorPaths,
): Promise<number> {
  const { git } = settings;
  const cwd = mirror.dir;
  return withMirrorLock(mirror, settings.lockTimeoutMs, async () => {
    await git.run(['worktree', 'prune'], { cwd });
    const worktrees = await git.stdout(['worktree', 'list', '--porcelain'], { cwd, maxBytes: 16 * 1024 * 1024 });
    const checkedOut = new Set(
      worktrees
        .split('\n')
        .filter((line) => line.startsWith('branch refs/heads/'))
        .map((line) => line.slice('branch refs/heads/'.length)),
    );
    const branches = (
      await git.stdout(['for-each-ref', '--format=%(refname:lstrip=2)', 'refs/heads/'], {
        cwd,
        maxBytes: 64 * 1024 * 1024,
      })
    )
      .split('\n')
      .filter((name) => name !== '' && !checkedOut.has(name));
    for (let i = 0; i < branches.length; i += chunk)
      await git.run(['branch', '--quiet', '-D', '--', ...branches.slice(i, i + chunk)], { cwd, okExitCodes: [1] });
    await git.run(['pack-refs', '--all', '--prune'], { cwd });
    // Lower thresholds than git's defaults (6700 loose objects, 50 packs): a mirror whose
    // every job adds a few hundred objects is packed every few jobs, not every few hundred.
    await git.run(['-c', 'gc.auto=256', '-c', 'gc.autoPackLimit=20', 'gc', '--auto', '--quiet'], { cwd });
    return branches.length;
  });
}

/** Every mirror under `cacheDir`, maintained one after the other; resolves the branches deleted. */
export async function maintainMirrors(settings: {
  git: Git;
  cacheDir: string;
  lockTimeoutMs: number;
}): Promise<number> {
  let deleted = 0;
  for (const mirror of await listMirrors(settings.cacheDir)) deleted += await maintainMirror(settings, mirror);
  return deleted;
}
