import { createHash } from 'node:crypto';
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import { tryLock, type LockHolder } from './lock-file.js';
import type { ReadOnlyPaths } from './scope.js';

/** The most pooled copies per repository; more means a leak, not a busy host. */
const maxSlots = 256;

/**
 * One working copy and its bookkeeping, side by side in the repository's pool directory
 * (`<cacheDir>/worktrees/<repo-hash>/`): `<name>/` the copy, `<name>.lock` who uses it,
 * `<name>.state.json` what prepare did to it that the next user must undo.
 */
export interface CopyPaths {
  name: string;
  dir: string;
  lock: string;
  state: string;
  /** A reusable pool slot (`slot-<n>`) rather than a one-job copy (`job-<hash>`). */
  pooled: boolean;
}

/** What prepare changed in a copy beyond git's knowledge, so reuse and removal can undo it. */
export interface CopyState {
  readOnly: ReadOnlyPaths;
  /** The sparse-checkout patterns in effect; null when the copy is complete. */
  sparse: string[] | null;
}

/** The pool directory of the repository whose mirror hash is `hash`. */
export function poolDir(cacheDir: string, hash: string): string {
  return join(cacheDir, 'worktrees', hash);
}

/** Paths of copy `name` in `pool`. */
export function copyPaths(pool: string, name: string): CopyPaths {
  const dir = join(pool, name);
  return { name, dir, lock: `${dir}.lock`, state: `${dir}.state.json`, pooled: name.startsWith('slot-') };
}

/** The one-job copy name of `jobId` (hashed: job ids may hold `:` and `.`). */
export function jobCopyName(jobId: string): string {
  return `job-${createHash('sha1').update(jobId).digest('hex').slice(0, 12)}`;
}

/**
 * Claims the lowest free pool slot for `holder`. A slot is free when it has no lock file,
 * or its lock's holder process is dead on this host (see `tryLock`); the sweeper frees the
 * slots of jobs that stopped running in processes that are still alive.
 */
export async function claimSlot(pool: string, holder: LockHolder): Promise<CopyPaths> {
  for (let n = 0; n < maxSlots; n += 1) {
    const paths = copyPaths(pool, `slot-${n}`);
    if (await tryLock(paths.lock, holder)) return paths;
  }
  throw new CodefleetError(
    'workspace_failed',
    `all ${maxSlots} working copy slots of ${pool} are in use; run the sweeper`,
  );
}

/** Names of the copies in `pool` that have a lock file or a directory. */
export async function listCopies(pool: string): Promise<string[]> {
  const entries = await readdir(pool, { withFileTypes: true }).catch(() => []);
  const names = new Set<string>();
  for (const entry of entries) {
    if (entry.isDirectory() && /^(slot|job)-[0-9a-f-]+$/.test(entry.name)) names.add(entry.name);
    const lock = /^((?:slot|job)-[0-9a-f-]+)\.lock$/.exec(entry.name);
    if (lock?.[1] !== undefined) names.add(lock[1]);
  }
  return [...names].sort();
}

/** Reads a copy's state; a missing or unreadable state means "nothing to undo". */
export async function readState(paths: CopyPaths): Promise<CopyState> {
  try {
    const state = JSON.parse(await readFile(paths.state, 'utf8')) as Partial<CopyState>;
    return {
      readOnly: { files: state.readOnly?.files ?? [], dirs: state.readOnly?.dirs ?? [] },
      sparse: state.sparse ?? null,
    };
  } catch {
    return { readOnly: { files: [], dirs: [] }, sparse: null };
  }
}

/** Writes a copy's state (before the changes it records, so a crash in between is undone too). */
export async function writeState(paths: CopyPaths, state: CopyState): Promise<void> {
  await writeFile(paths.state, `${JSON.stringify(state)}\n`);
}

/** Deletes a copy's state file. */
export async function removeState(paths: CopyPaths): Promise<void> {
  await rm(paths.state, { force: true });
}
