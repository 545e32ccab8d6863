import { resolve } from 'node:path';
import type { WorkspaceConfig } from '@codefleet/config';
import { createGit, defaultGitTimeoutMs } from './git.js';
import { prepareWorkspace, type PrepareRequest } from './prepare.js';
import { sweepWorkspaces, type IsRunning, type SweepResult } from './sweep.js';
import { evictCache, type CacheLimits, type EvictResult } from './evict.js';
import { maintainMirror, maintainMirrors } from './maintain.js';
import type { MirrorPaths } from './mirror.js';
import type { Workspace } from './workspace.js';

/** Settings of {@link createWorkspaceManager}. */
export interface WorkspaceManagerOptions {
  /** Holds `mirrors/` (one bare mirror per repository) and `worktrees/` (the copies). */
  cacheDir: string;
  /** Pool and reset working copies (fast); false gives every job a fresh copy, removed on release. */
  reuse: boolean;
  /**
   * The complete environment of every git call (PATH, HOME, identity settings);
   * `GIT_TERMINAL_PROMPT=0` is added. Nothing is read from this process's own environment.
   */
  gitEnv: Record<string, string>;
  /**
   * The environment of the git calls that reach the remote (the mirror's fetch), with the
   * credential helper or GIT_ASKPASS settings; default `gitEnv`. Kept apart because the
   * local calls (status, add, commit in a copy an agent wrote) can run programs the copy's
   * config or attributes name, and those must not see a token.
   */
  remoteGitEnv?: Record<string, string>;
  /** Time limit of each git call; default 120 000 ms. */
  gitTimeoutMs?: number;
  /**
   * The git binary: an absolute path the worker resolved once at start, so a `git` planted
   * later on PATH (in a HOME an unsandboxed agent can write) never runs. Default `git`.
   */
  gitPath?: string;
  /** A mirror is maintained (see `maintain`) in the background after every this many jobs on it; default 25. */
  maintainEvery?: number;
}

/**
 * Working copies for jobs, on one host. What it promises: one persistent mirror per
 * repository, fetched under a lock that holds across processes; an isolated copy per
 * running job, on the job's branch, with scope and context applied; cleanup of what
 * stopped jobs left behind. What it leaves out: pushing (the forge does that, from the
 * copy), credentials (the caller's `remoteGitEnv` names a credential helper), and isolation from
 * a hostile process of the same user (copies share the mirror's object store and config).
 */
export interface WorkspaceManager {
  /** Prepares the working copy of a job; see {@link PrepareRequest}. */
  prepare(req: PrepareRequest): Promise<Workspace>;
  /**
   * Removes working copies (and releases pool slots) whose job is not running any more;
   * returns what it removed. `isRunning` must say true for jobs still being prepared.
   */
  sweep(isRunning: IsRunning): Promise<SweepResult>;
  /**
   * Applies the cache limits (`workspace.cache`): evicts the least recently used
   * repositories' mirrors, pooled copies and baselines past the age or over the size, and
   * idle pooled copies and baseline files past the age; never a repository in use.
   */
  evict(limits: CacheLimits): Promise<EvictResult>;
  /**
   * Mirror upkeep in every mirror: work branches of finished jobs deleted, refs packed,
   * loose objects packed past a few hundred (see maintainMirror). Resolves the branches
   * deleted. Also run in the background after every `maintainEvery` jobs on a mirror.
   */
  maintain(): Promise<number>;
}

/** Creates a {@link WorkspaceManager}. */
export function createWorkspaceManager(options: WorkspaceManagerOptions): WorkspaceManager {
  const gitTimeoutMs = options.gitTimeoutMs ?? defaultGitTimeoutMs;
  const settings = {
    git: createGit(options.gitEnv, gitTimeoutMs, options.gitPath),
    remoteGit: createGit(options.remoteGitEnv ?? options.gitEnv, gitTimeoutMs, options.gitPath),
    // Absolute: git records worktree paths, and copies are compared by path.
    cacheDir: resolve(options.cacheDir),
    reuse: options.reuse,
    // Long enough for another job's fetch (a few git calls) to finish first.
    lockTimeoutMs: gitTimeoutMs * 5,
  };
  const every = options.maintainEvery ?? 25;
  const prepared = new Map<string, number>();
  // Counted per mirror in this process; the upkeep waits for the mirror's lock like a fetch,
  // and a failed one only means the next does it.
  const onPrepared = (mirror: MirrorPaths) => {
    const count = (prepared.get(mirror.hash) ?? 0) + 1;
    prepared.set(mirror.hash, count % every);
    if (count >= every) void maintainMirror(settings, mirror).catch(() => undefined);
  };
  return {
    prepare: (request) => prepareWorkspace({ ...settings, onPrepared }, request),
    sweep: (isRunning) => sweepWorkspaces(settings, isRunning),
    evict: (limits) => evictCache(settings, limits),
    maintain: () => maintainMirrors(settings),
  };
}

/** Manager options from the `workspace:` section of the config and the git environment. */
export function workspaceManagerOptions(
  config: WorkspaceConfig,
  gitEnv: Record<string, string>,
): WorkspaceManagerOptions {
  return { cacheDir: config.cache_dir, reuse: config.reuse, gitEnv };
}
