import { access, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Git } from './git.js';
import { breakLock, isPidAlive, isStale, newHolder, readLock, tryLock, unlock, type LockState } from './lock-file.js';
import { withMirrorLock, type MirrorPaths } from './mirror.js';
import { gradingDir } from './grading-copy.js';
import { copyPaths, listCopies, type CopyPaths } from './pool.js';
import { removeTree } from './remove-tree.js';
import { removeCopy, type CopyContext } from './working-copy.js';

/** Answers whether a job is still running (the queue or worker knows; the workspace does not). */
export type IsRunning = (jobId: string) => boolean | Promise<boolean>;

/** What a sweep did. */
export interface SweepResult {
  /** Working copies deleted (one-job copies of jobs that stopped). */
  removed: string[];
  /** Pool slots freed for reuse (their directories stay, and are reset by the next job). */
  released: string[];
}

/**
 * Frees what jobs that stopped running left behind, in every repository's pool: a copy is
 * abandoned when its lock's holder process is dead on this host, or `isRunning` says its
 * job is not running any more. Abandoned pool slots are released, abandoned one-job copies
 * (and lockless leftovers of crashed prepares) deleted, with the grading copy beside any of
 * them; then `git worktree prune` drops the
 * registrations of directories that are gone, and `git gc --auto` keeps the mirror
 * compact. Copies kept for inspection are left alone.
 */
export async function sweepWorkspaces(
  settings: { git: Git; cacheDir: string; lockTimeoutMs: number },
  isRunning: IsRunning,
): Promise<SweepResult> {
  const result: SweepResult = { removed: [], released: [] };
  const root = join(settings.cacheDir, 'worktrees');
  const pools = await readdir(root, { withFileTypes: true }).catch(() => []);
  await removeLeftovers(join(settings.cacheDir, 'mirrors'));
  for (const entry of pools) {
    if (!entry.isDirectory() || !/^[0-9a-f]{40}$/.test(entry.name)) continue;
    const pool = join(root, entry.name);
    await removeLeftovers(pool);
    const mirrorDir = join(settings.cacheDir, 'mirrors', `${entry.name}.git`);
    const mirror: MirrorPaths = { hash: entry.name, dir: mirrorDir, lock: `${mirrorDir}.lock` };
    const hasMirror = await access(join(mirrorDir, 'config')).then(
      () => true,
      () => false,
    );
    for (const name of await listCopies(pool)) {
      const paths = copyPaths(pool, name);
      const state = await readLock(paths.lock);
      if (!(await isAbandoned(state, isRunning))) continue;
      // The grading copy a job stopped mid-grade left beside its copy (see makeGradingCopy).
      await removeTree(gradingDir(paths.dir));
      if (state.kind !== 'free' && !(await breakLock(paths.lock, (now) => sameLock(now, state)))) continue;
      if (paths.pooled) {
        if (state.kind !== 'free') result.released.push(paths.dir);
        continue;
      }
      const withLock = <T>(fn: () => Promise<T>) => withMirrorLock(mirror, settings.lockTimeoutMs, fn);
      if (hasMirror && (await removeUnderLock({ git: settings.git, mirrorDir, withMirrorLock: withLock }, paths)))
        result.removed.push(paths.dir);
    }
    if (hasMirror) {
      await withMirrorLock(mirror, settings.lockTimeoutMs, async () => {
        await settings.git.run(['worktree', 'prune'], { cwd: mirrorDir });
        // Automatic gc is off in the mirror (never in the middle of a prepare), so it runs
        // here, under the lock, with git's usual thresholds: packs from many fetches would
        // pile up otherwise. Unreachable objects an agent just wrote survive (prune expiry).
        await settings.git.run(['-c', 'gc.auto=6700', '-c', 'gc.autoPackLimit=50', 'gc', '--auto', '--quiet'], {
          cwd: mirrorDir,
        });
      });
    }
  }
  return result;
}

/** How old a temporary file must be before the sweeper takes it for a dead writer's. */
const leftoverAgeMs = 10 * 60_000;

/**
 * Deletes what processes killed half-way through a step left in `dir`: the temporary file
 * of a lock or of its takeover guard (`<lock>.<token>.tmp`, `<lock>.takeover-<token>.tmp`,
 * written and linked into place within milliseconds) and a mirror clone in progress
 * (`<hash>.git.tmp-<pid>`) whose process is gone. Both are only
 * taken when older than {@link leftoverAgeMs}, so a live writer is never raced; the cache
 * directory belongs to this host, so its pids are this host's.
 */
async function removeLeftovers(dir: string): Promise<void> {
  const entries = await readdir(dir).catch(() => []);
  const now = Date.now();
  for (const name of entries) {
    const lockTemp = /\.lock\.[\w-]+\.tmp$/.test(name);
    const clone = /\.git\.tmp-(\d+)$/.exec(name);
    if (!lockTemp && !(clone && !isPidAlive(Number(clone[1])))) continue;
    const info = await stat(join(dir, name)).catch(() => undefined);
    if (info === undefined || now - info.mtimeMs < leftoverAgeMs) continue;
    await rm(join(dir, name), { recursive: true, force: true });
  }
}

async function isAbandoned(state: LockState, isRunning: IsRunning): Promise<boolean> {
  if (state.kind === 'free') return true; // a pool slot at rest, or a crashed prepare's leftover
  if (isStale(state)) return true;
  if (state.kind !== 'held' || state.holder.kept === true) return false;
  return state.holder.jobId === undefined ? false : !(await isRunning(state.holder.jobId));
}

function sameLock(now: LockState, before: LockState): boolean {
  if (now.kind === 'held' && before.kind === 'held') return now.holder.token === before.holder.token;
  return now.kind === 'unreadable' && before.kind === 'unreadable';
}

/**
 * Deletes a one-job copy while holding its lock, so a new attempt of the same job cannot
 * claim the name and start filling the directory while it is being deleted.
 */
async function removeUnderLock(ctx: CopyContext, paths: CopyPaths): Promise<boolean> {
  const holder = newHolder();
  if (!(await tryLock(paths.lock, holder))) return false;
  try {
    await removeCopy(ctx, paths);
    return true;
  } finally {
    await unlock(paths.lock, holder);
  }
}
