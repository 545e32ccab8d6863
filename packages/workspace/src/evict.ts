import { lstat, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Git } from './git.js';
import { isStale, newHolder, readLock, tryLock, unlock, type LockHolder } from './lock-file.js';
import { withMirrorLock, type MirrorPaths } from './mirror.js';
import { copyPaths, listCopies, poolDir, type CopyPaths } from './pool.js';
import { removeTree } from './remove-tree.js';
import { removeCopy } from './working-copy.js';

// The cache limits (workspace.cache): a repository's mirror, its pool of working copies and
// its baselines are evicted together, least recently used first, by age and by total size;
// within a repository still kept, idle pool slots and baseline files past the age go alone.
// A repository is in use while any of its copies is locked by a live holder (a running job,
// or a copy kept for inspection) or it was used within the grace period (a job between its
// fetch and its claim of a slot); it is never evicted then, and the eviction itself holds
// the mirror's lock and every copy lock, so no job can start on it meanwhile.

/** Limits of the working-copy cache. */
export interface CacheLimits {
  /** Above this many bytes of mirrors, copies and baselines, the least recently used repositories go. */
  maxBytes?: number | undefined;
  /** A repository unused this long goes; an idle pooled copy or a baseline file this old goes alone. */
  maxAgeMs?: number | undefined;
  /** Used more recently than this: never evicted. Default 10 minutes. */
  graceMs?: number;
}

/** What {@link evictCache} removed, and what the cache holds after. */
export interface EvictResult {
  /** Mirror directories evicted (with their pools and baselines). */
  mirrors: string[];
  /** Pooled copies removed: idle ones past the age, and those of evicted repositories. */
  pooledCopies: number;
  baselines: number;
  /** Bytes the cache holds afterwards (mirrors, copies, baselines). */
  bytes: number;
}

const defaultGraceMs = 10 * 60_000;

/** Marks the repository of `mirror` as used now (prepare calls it before the fetch). */
export async function markUsed(mirror: MirrorPaths): Promise<void> {
  const now = new Date();
  await utimes(usedStamp(mirror), now, now).catch(() => writeFile(usedStamp(mirror), ''));
}

const usedStamp = (mirror: MirrorPaths) => `${mirror.dir}.used`;
const baselinesDir = (mirror: MirrorPaths) => `${mirror.dir}.baselines`;

/** One repository in the cache. */
interface Cached {
  mirror: MirrorPaths;
  pool: string;
  lastUsed: number;
  bytes: number;
  inUse: boolean;
}

/** Applies `limits` to the cache under `cacheDir`; see the note at the top of this file. */
export async function evictCache(
  settings: { git: Git; cacheDir: string; lockTimeoutMs: number },
  limits: CacheLimits,
  now = Date.now(),
): Promise<EvictResult> {
  const result: EvictResult = { mirrors: [], pooledCopies: 0, baselines: 0, bytes: 0 };
  const graceMs = limits.graceMs ?? defaultGraceMs;
  const repos: Cached[] = [];
  for (const mirror of await listMirrors(settings.cacheDir)) {
    if (limits.maxAgeMs !== undefined) {
      result.baselines += await removeOldFiles(baselinesDir(mirror), now - limits.maxAgeMs);
      result.pooledCopies += await removeIdleSlots(settings, mirror, now - limits.maxAgeMs);
    }
    repos.push(await describe(settings.cacheDir, mirror));
  }
  // Oldest first: by age, then by size until the total fits.
  repos.sort((a, b) => a.lastUsed - b.lastUsed);
  let total = repos.reduce((sum, repo) => sum + repo.bytes, 0);
  for (const repo of repos) {
    const old = limits.maxAgeMs !== undefined && repo.lastUsed < now - limits.maxAgeMs;
    const over = limits.maxBytes !== undefined && total > limits.maxBytes;
    if (!old && !over) continue;
    if (repo.inUse || repo.lastUsed > now - graceMs) continue;
    const copies = await evictRepo(settings, repo);
    if (copies === undefined) continue;
    result.mirrors.push(repo.mirror.dir);
    result.pooledCopies += copies;
    total -= repo.bytes;
  }
  result.bytes = total;
  return result;
}

/** The mirrors under `cacheDir`. */
export async function listMirrors(cacheDir: string): Promise<MirrorPaths[]> {
  const dir = join(cacheDir, 'mirrors');
  const entries = await readdir(dir).catch(() => []);
  return entries
    .map((name) => /^([0-9a-f]{40})\.git$/.exec(name)?.[1])
    .filter((hash): hash is string => hash !== undefined)
    .map((hash) => {
      const mirrorDir = join(dir, `${hash}.git`);
      return { hash, dir: mirrorDir, lock: `${mirrorDir}.lock` };
    });
}

async function describe(cacheDir: string, mirror: MirrorPaths): Promise<Cached> {
  const pool = poolDir(cacheDir, mirror.hash);
  const used = await stat(usedStamp(mirror)).catch(() => stat(mirror.dir));
  let inUse = false;
  for (const name of await listCopies(pool)) if (await held(copyPaths(pool, name))) inUse = true;
  const bytes = (await Promise.all([mirror.dir, pool, baselinesDir(mirror)].map(diskBytes))).reduce((a, b) => a + b);
  return { mirror, pool, lastUsed: used.mtimeMs, bytes, inUse };
}

/** Held by a live holder (a running job, a copy kept for inspection), or by another host's. */
async function held(paths: CopyPaths): Promise<boolean> {
  const state = await readLock(paths.lock);
  return state.kind !== 'free' && !isStale(state);
}

/** Bytes of the files under `path` (0 when it is gone), symlinks not followed. */
export async function diskBytes(path: string): Promise<number> {
  const info = await lstat(path).catch(() => undefined);
  if (info === undefined) return 0;
  if (!info.isDirectory()) return info.size;
  let sum = 0;
  for (const entry of await readdir(path).catch(() => [])) sum += await diskBytes(join(path, entry));
  return sum;
}

/** Deletes the files in `dir` last written before `before`; resolves how many. */
async function removeOldFiles(dir: string, before: number): Promise<number> {
  let removed = 0;
  for (const name of await readdir(dir).catch(() => [])) {
    const info = await stat(join(dir, name)).catch(() => undefined);
    if (info === undefined || !info.isFile() || info.mtimeMs >= before) continue;
    await rm(join(dir, name), { force: true });
    removed += 1;
  }
  return removed;
}

/**
 * Removes the pool slots of `mirror` that no job has prepared since `before` (their state
 * file is written at each prepare) and that nobody holds: the pool shrinks back after a burst.
 */
async function removeIdleSlots(
  settings: { git: Git; cacheDir: string; lockTimeoutMs: number },
  mirror: MirrorPaths,
  before: number,
): Promise<number> {
  const pool = poolDir(settings.cacheDir, mirror.hash);
  let removed = 0;
  for (const name of await listCopies(pool)) {
    const paths = copyPaths(pool, name);
    if (!paths.pooled) continue;
    const info = await stat(paths.state).catch(() => stat(paths.dir).catch(() => undefined));
    if (info === undefined || info.mtimeMs >= before) continue;
    const holder = newHolder();
    if (!(await tryLock(paths.lock, holder))) continue;
    try {
      const withLock = <T>(fn: () => Promise<T>) => withMirrorLock(mirror, settings.lockTimeoutMs, fn);
      await removeCopy({ git: settings.git, mirrorDir: mirror.dir, withMirrorLock: withLock }, paths);
      removed += 1;
    } finally {
      await unlock(paths.lock, holder);
    }
  }
  return removed;
}

/**
 * Deletes a repository's pool, baselines and mirror under the mirror's lock, holding every
 * copy lock first; undefined (nothing deleted) when a copy turned out to be held.
 */
async function evictRepo(
  settings: { cacheDir: string; lockTimeoutMs: number },
  repo: Cached,
): Promise<number | undefined> {
  return withMirrorLock(repo.mirror, settings.lockTimeoutMs, async () => {
    const holder = newHolder();
    const taken: { paths: CopyPaths; holder: LockHolder }[] = [];
    let copies = 0;
    try {
      for (const name of await listCopies(repo.pool)) {
        const paths = copyPaths(repo.pool, name);
        if (!(await tryLock(paths.lock, holder))) return undefined;
        taken.push({ paths, holder });
        if (paths.pooled) copies += 1;
      }
      await removeTree(repo.pool);
      await removeTree(baselinesDir(repo.mirror));
      await removeTree(repo.mirror.dir);
      await rm(usedStamp(repo.mirror), { force: true });
      return copies;
    } finally {
      // Gone with the pool once evicted; released as they were when a copy was held.
      for (const { paths, holder: h } of taken) await unlock(paths.lock, h).catch(() => undefined);
    }
  });
}
