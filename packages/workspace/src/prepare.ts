import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { branchNameProblem, checkRepoRef, CodefleetError, InvalidJobError, objectIdPattern } from '@codefleet/core';
import { checkContextPaths, contextCandidates, writeContextFiles } from './context-files.js';
import type { Git } from './git.js';
import { newHolder, readLock, tryLock, unlock, type LockHolder } from './lock-file.js';
import { mirrorPaths, syncMirror, withMirrorLock, type MirrorPaths } from './mirror.js';
import { markUsed } from './evict.js';
import { claimSlot, copyPaths, jobCopyName, poolDir, readState, writeState, type CopyPaths } from './pool.js';
import { checkScope, makeReadOnly, readOnlyPaths, sparsePatterns, type Scope } from './scope.js';
import {
  checkedOutFiles,
  createCopy,
  removeCopy,
  resetCopy,
  trackedAmong,
  worktreeGitDir,
  type CopyContext,
  type CopyTarget,
} from './working-copy.js';
import { writeHistory } from './history.js';
import { openWorkspace, type Workspace } from './workspace.js';

/** What a job asks {@link prepareWorkspace} for. */
export interface PrepareRequest {
  jobId: string;
  /** Absolute local path or git URL; never with credentials (refused). */
  repoUrl: string;
  /** Default: the remote's HEAD branch. */
  baseBranch?: string;
  /**
   * A commit to start from instead of the base branch's head (a full id; the branch is still
   * the pull request's base). The job's runs then read an object store of its own holding
   * this commit's history only (see history.ts): no later commit, no other branch.
   */
  baseCommit?: string;
  /** The work branch, see `branchName`. */
  branch: string;
  /** Gitignore-style patterns: `exclude` absent from the copy, `read` read-only. */
  scope?: Scope;
  /** Relative path → content, e.g. `.codefleet/task.md`, `CLAUDE.md`; written into the copy, never committed. */
  context?: Record<string, string>;
  signal?: AbortSignal;
}

/** The manager's settings, resolved. */
export interface PrepareSettings {
  /** Every git call that stays on this host: no credentials in its environment. */
  git: Git;
  /** The calls that reach the remote (the mirror's fetch): the credential helper is here. */
  remoteGit: Git;
  cacheDir: string;
  reuse: boolean;
  lockTimeoutMs: number;
  /** Told of each prepared copy's mirror (the manager's count toward mirror upkeep). */
  onPrepared?: (mirror: MirrorPaths) => void;
}

/**
 * Prepares a job's working copy: sync the mirror, claim a copy (a pool slot when reusing,
 * else a fresh one for this job), check it out on the work branch (from the remote work
 * branch when it exists, else from the base), apply scope, write context files.
 */
export async function prepareWorkspace(settings: PrepareSettings, request: PrepareRequest): Promise<Workspace> {
  const url = checkRequest(request);
  const { git } = settings;
  const { signal } = request;
  const mirror = mirrorPaths(settings.cacheDir, url);
  // Before the fetch: the cache limits never evict a repository a job is starting on.
  await mkdir(join(mirror.dir, '..'), { recursive: true });
  await markUsed(mirror);
  const heads = await syncMirror({ local: git, remote: settings.remoteGit }, mirror, {
    url,
    branch: request.branch,
    baseBranch: request.baseBranch,
    baseCommit: request.baseCommit,
    signal,
    lockTimeoutMs: settings.lockTimeoutMs,
  });
  const pool = poolDir(settings.cacheDir, mirror.hash);
  await mkdir(pool, { recursive: true });
  // Made now: runs bind it read-only, whether or not a package manager is fetched into it.
  const toolsDir = join(settings.cacheDir, 'tools');
  await mkdir(toolsDir, { recursive: true });
  const holder = newHolder(request.jobId);
  const paths = settings.reuse ? await claimSlot(pool, holder) : await claimJobCopy(pool, holder, request.jobId);
  const withLock = <T>(fn: () => Promise<T>) => withMirrorLock(mirror, settings.lockTimeoutMs, fn);
  const ctx: CopyContext = { git, mirrorDir: mirror.dir, signal, withMirrorLock: withLock };
  const startSha = heads.existingRemoteSha ?? heads.baseSha;
  const target: CopyTarget = {
    branch: request.branch,
    startSha,
    sparse: sparsePatterns(request.scope?.exclude) ?? null,
  };

  try {
    if (!(await resetIfReusable(ctx, paths, target))) await createCopy(ctx, paths, target);
    const read = request.scope?.read ?? [];
    const readOnly = readOnlyPaths(read.length === 0 ? [] : await checkedOutFiles(ctx, paths.dir), read);
    const tracked = await trackedAmong(ctx, paths.dir, contextCandidates(request.context));
    // Context before chmod, so a context file may live in a directory that becomes read-only.
    const context = await writeContextFiles(paths.dir, request.context, tracked);
    // Recorded before the chmod, so even a crash right after it is undone by the next reset.
    await writeState(paths, { readOnly, sparse: target.sparse });
    await makeReadOnly(paths.dir, readOnly);
    const gitDir = await worktreeGitDir(ctx, paths.dir);
    if (gitDir === undefined)
      throw new CodefleetError('workspace_failed', `the new working copy ${paths.dir} is not a worktree of its mirror`);
    const historyObjects =
      request.baseCommit === undefined
        ? undefined
        : await writeHistory(git, { copyDir: paths.dir, mirrorDir: mirror.dir, startSha, signal });
    settings.onPrepared?.(mirror);
    return openWorkspace({
      historyObjects,
      gitDir,
      toolsDir,
      ctx: { git, mirrorDir: mirror.dir, withMirrorLock: withLock },
      paths,
      holder,
      jobId: request.jobId,
      repoUrl: url,
      branch: request.branch,
      baseBranch: heads.baseBranch,
      baseSha: heads.baseSha,
      startSha,
      existingRemoteSha: heads.existingRemoteSha,
      forkSha: heads.forkSha,
      contextFiles: context.written,
      skippedContext: context.skipped,
      scope: request.scope,
    });
  } catch (error) {
    // A pool slot keeps its directory (the next reset repairs it); a one-job copy goes.
    if (!paths.pooled)
      await removeCopy({ git, mirrorDir: mirror.dir, withMirrorLock: withLock }, paths).catch(() => undefined);
    await unlock(paths.lock, holder);
    throw error;
  }
}

function checkRequest(request: PrepareRequest): string {
  const ref = checkRepoRef(request.repoUrl);
  if (typeof ref === 'string') {
    throw new InvalidJobError(`invalid repository URL: ${ref}`, [{ path: 'repo', message: ref }]);
  }
  if (ref.kind === 'github') {
    const message = 'expected a local path or git URL; resolve owner/name to a URL through the forge first';
    throw new InvalidJobError(`invalid repository URL: ${message}`, [{ path: 'repo', message }]);
  }
  for (const [field, name] of [
    ['branch', request.branch],
    ['baseBranch', request.baseBranch],
  ] as const) {
    const problem = name === undefined ? undefined : branchNameProblem(name);
    if (problem !== undefined)
      throw new InvalidJobError(`invalid ${field}: ${problem}`, [{ path: field, message: problem }]);
  }
  if (request.baseCommit !== undefined && !objectIdPattern.test(request.baseCommit)) {
    const message = 'expected a full commit id (40 or 64 hexadecimal digits, lower case)';
    throw new InvalidJobError(`invalid baseCommit: ${message}`, [{ path: 'baseCommit', message }]);
  }
  checkScope(request.scope);
  checkContextPaths(request.context);
  return ref.kind === 'path' ? ref.path : ref.url;
}

/**
 * The copy of a job that does not reuse: `job-<hash>`, or `job-<hash>-<n>` when copies of
 * earlier attempts were kept for inspection. A live holder means the same job is being
 * prepared elsewhere right now, which the queue's lease should have made impossible.
 */
async function claimJobCopy(pool: string, holder: LockHolder, jobId: string): Promise<CopyPaths> {
  const base = jobCopyName(jobId);
  for (let n = 0; n < 100; n += 1) {
    const paths = copyPaths(pool, n === 0 ? base : `${base}-${n}`);
    if (await tryLock(paths.lock, holder)) return paths;
    const state = await readLock(paths.lock);
    if (state.kind === 'held' && state.holder.kept === true) continue;
    const by = state.kind === 'held' ? ` by pid ${state.holder.pid} on ${state.holder.host}` : '';
    throw new CodefleetError('workspace_failed', `job ${jobId} already has a working copy in use${by}`);
  }
  throw new CodefleetError('workspace_failed', `could not claim a working copy for job ${jobId}`);
}

/** Resets an existing pooled copy; false when there is none or it is beyond repair. */
async function resetIfReusable(ctx: CopyContext, paths: CopyPaths, target: CopyTarget): Promise<boolean> {
  if (!paths.pooled) return false;
  const isDir = await stat(paths.dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDir) return false;
  try {
    return await resetCopy(ctx, paths, target, await readState(paths));
  } catch (error) {
    // Whatever an agent left behind that a reset cannot undo (a chmod'ed tree, a corrupt
    // index), a fresh copy can. Cancellation is not such a failure.
    if ((error as { code?: unknown }).code === 'cancelled') throw error;
    return false;
  }
}
