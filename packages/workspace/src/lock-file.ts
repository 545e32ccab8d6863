import { randomBytes } from 'node:crypto';
import { link, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { CodefleetError } from '@codefleet/core';

/** Who holds a lock file; the file's whole content, as JSON. */
export interface LockHolder {
  /** The job using the locked thing; absent for short locks such as the mirror lock. */
  jobId?: string;
  pid: number;
  host: string;
  /** Unique per acquisition, so a holder only ever removes its own lock. */
  token: string;
  createdAt: string;
  /** Left for inspection (`release({ keep: true })`): never stale, never swept. */
  kept?: boolean;
}

/** What a lock path holds right now. */
export type LockState =
  | { kind: 'free' }
  | { kind: 'held'; holder: LockHolder }
  /** Content that is not a holder (a disk filled up mid-write in an older version, a stray file). */
  | { kind: 'unreadable'; ageMs: number };

// A corrupt lock file cannot name a pid to probe, so only age can free it.
const unreadableStaleMs = 60_000;
// The takeover guard is held for a few file operations; older than this, its holder died.
const guardStaleMs = 30_000;

/** Creates the holder record of this process for `jobId`. */
export function newHolder(jobId?: string): LockHolder {
  return {
    ...(jobId === undefined ? {} : { jobId }),
    pid: process.pid,
    host: hostname(),
    token: randomBytes(8).toString('hex'),
    createdAt: new Date().toISOString(),
  };
}

/** True while a process with this pid exists on this host. */
export function isPidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Reads a lock file without throwing for a missing or corrupt one. */
export async function readLock(path: string): Promise<LockState> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'free' };
    throw error;
  }
  try {
    const holder = JSON.parse(text) as LockHolder;
    if (typeof holder.pid === 'number' && typeof holder.host === 'string' && typeof holder.token === 'string') {
      return { kind: 'held', holder };
    }
  } catch {
    // fall through: treated like any other unreadable content
  }
  const ageMs = await stat(path).then(
    (s) => Date.now() - s.mtimeMs,
    () => 0,
  );
  return { kind: 'unreadable', ageMs };
}

/**
 * True when nobody can be using the lock any more: its holder pid is dead on this host, or
 * the content is unreadable and old. Locks of other hosts are never stale by pid (a pid
 * means nothing there); the sweeper frees those by asking whether the job still runs.
 */
export function isStale(state: LockState): boolean {
  if (state.kind === 'free') return false;
  if (state.kind === 'unreadable') return state.ageMs > unreadableStaleMs;
  const { holder } = state;
  return holder.kept !== true && holder.host === hostname() && !isPidAlive(holder.pid);
}

/**
 * Takes the lock at `path` for `holder` if it is free or stale; true when taken. The file
 * is written completely under a temporary name and then hard-linked into place: `link`
 * fails with EEXIST exactly like an O_EXCL create, and nobody ever reads a half-written
 * holder.
 */
export async function tryLock(path: string, holder: LockHolder): Promise<boolean> {
  const temp = `${path}.${holder.token}.tmp`;
  await writeFile(temp, `${JSON.stringify(holder)}\n`, { flag: 'wx' });
  try {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      if (await linkNew(temp, path)) return true;
      if (!(await breakLock(path, isStale))) return false;
    }
    return false;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/** Hard-links `temp` to `path`; false when `path` exists (EEXIST, as an O_EXCL create). */
async function linkNew(temp: string, path: string): Promise<boolean> {
  try {
    await link(temp, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  }
}

/** Options of {@link lock}. */
export interface WaitLockOptions {
  signal?: AbortSignal | undefined;
  timeoutMs: number;
  pollMs?: number;
  /** Names the lock in the timeout error. */
  what: string;
}

/** Waits until the lock at `path` is taken for `holder` (polling); throws on timeout or abort. */
export async function lock(path: string, holder: LockHolder, options: WaitLockOptions): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    if (options.signal?.aborted) throw new CodefleetError('cancelled', `cancelled while waiting for ${options.what}`);
    if (await tryLock(path, holder)) return;
    if (Date.now() >= deadline) {
      const state = await readLock(path);
      const by = state.kind === 'held' ? ` (held by pid ${state.holder.pid} on ${state.holder.host})` : '';
      throw new CodefleetError(
        'workspace_failed',
        `timed out after ${options.timeoutMs} ms waiting for ${options.what}${by}`,
      );
    }
    await sleep(options.pollMs ?? 100);
  }
}

/** Removes the lock at `path` if `holder` still holds it (never someone else's). */
export async function unlock(path: string, holder: LockHolder): Promise<void> {
  const state = await readLock(path);
  if (state.kind === 'held' && state.holder.token === holder.token) await unlink(path).catch(() => undefined);
}

/** Rewrites the lock's content while keeping it (for `kept` copies); only by its holder. */
export async function updateLock(path: string, holder: LockHolder, next: LockHolder): Promise<void> {
  const state = await readLock(path);
  if (state.kind !== 'held' || state.holder.token !== holder.token) return;
  await writeFile(path, `${JSON.stringify(next)}\n`);
}

/**
 * Removes the lock at `path` when `shouldBreak` still says so after taking a short takeover
 * guard. Without the guard two processes could both find the same stale lock, one remove
 * it and take a new one, and the other then remove that new, live lock.
 */
export async function breakLock(
  path: string,
  shouldBreak: (state: LockState) => boolean | Promise<boolean>,
): Promise<boolean> {
  const guard = `${path}.takeover`;
  for (let attempt = 0; ; attempt += 1) {
    if (await takeGuard(guard)) break;
    // A guard left by a process that died holding it (killed between two file
    // operations) is stale at once; one from elsewhere only after guardStaleMs.
    if (attempt > 0 || !(await isStaleGuard(guard))) return false;
    await unlink(guard).catch(() => undefined);
  }
  try {
    const state = await readLock(path);
    if (state.kind === 'free') return true;
    if (!(await shouldBreak(state))) return false;
    await unlink(path).catch(() => undefined);
    return true;
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}

/**
 * Creates the takeover guard like a lock: written whole under a temporary name (which the
 * sweeper removes if this process dies first), then linked into place. A guard created
 * empty and written after would, if its process were killed in between, name nobody, and
 * block every takeover of the lock for guardStaleMs.
 */
async function takeGuard(guard: string): Promise<boolean> {
  const temp = `${guard}-${randomBytes(8).toString('hex')}.tmp`;
  await writeFile(temp, `${hostname()} ${process.pid}`, { flag: 'wx' });
  try {
    return await linkNew(temp, guard);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

async function isStaleGuard(guard: string): Promise<boolean> {
  const [text, age] = await Promise.all([
    readFile(guard, 'utf8').catch(() => undefined),
    stat(guard).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    ),
  ]);
  // Guards are never written in place, so an empty one is debris of a killed process
  // (from versions that did write in place): nobody holds it.
  if (text === '') return true;
  const [host, pid] = (text ?? '').split(' ');
  return age > guardStaleMs || (host === hostname() && !isPidAlive(Number(pid)));
}
