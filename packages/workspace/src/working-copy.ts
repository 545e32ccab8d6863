import { realpath, rm, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { installRecords } from './install-records.js';
import { splitNul, type Git } from './git.js';
import { readState, removeState, type CopyPaths, type CopyState } from './pool.js';
import { removeTree } from './remove-tree.js';
import { restoreWritable } from './scope.js';

/** codefleet's own directory in a working copy: context, prompt and feedback files; never committed. */
export const codefleetDir = '.codefleet';

/**
 * Dependency directories a pooled copy keeps between jobs (`git clean -x` spares them), so
 * the next job's install and verify start warm. Matched at any depth: monorepos have one
 * `node_modules` per package.
 */
export const keptDependencyDirs = ['node_modules'] as const;

/**
 * Where the dependency hash of the copy's last install is kept: beside the copy in the pool,
 * where no sandboxed run can write, so only a real install step makes it.
 */
export function installStampPath(paths: Pick<CopyPaths, 'dir'>): string {
  return `${paths.dir}.install-stamp`;
}

/** Output kept for file listings (`ls-files`, `diff --name-only`): a few million paths. */
export const listingBytes = 256 * 1024 * 1024;

/** What the copy operations need: git, the mirror they belong to, the job's abort signal. */
export interface CopyContext {
  git: Git;
  mirrorDir: string;
  signal?: AbortSignal | undefined;
  /**
   * Runs `fn` holding the mirror's lock. Adding or removing a worktree changes
   * `worktrees/` in the mirror, and a concurrent `git fetch` there reads every worktree's
   * HEAD for its connectivity check: one half made fails the fetch with "bad object".
   */
  withMirrorLock?: <T>(fn: () => Promise<T>) => Promise<T>;
}

/** Runs `fn` under the mirror's lock when the context has one. */
export const locked = <T>(ctx: CopyContext, fn: () => Promise<T>): Promise<T> =>
  ctx.withMirrorLock ? ctx.withMirrorLock(fn) : fn();

/** Where a copy should end up: on `branch` at `startSha`, with these sparse patterns. */
export interface CopyTarget {
  branch: string;
  startSha: string;
  sparse: string[] | null;
}

/**
 * Adds a new worktree of the mirror at `paths.dir`. The sparse patterns are set before any
 * file is written, so excluded files never touch the disk, not even for a moment.
 *
 * Worktree rather than `clone --shared`, by measurement (`npm run bench`, 26 003 files,
 * 350 MB): both write every file of the tree, and that is nearly all they cost. Medians
 * of three bench runs: worktree 9.8 / 17.0 / 17.2 s, clone --shared + checkout 23.8 /
 * 21.3 / 21.1 s; run back to back by hand on a quiet disk, 2.7 s each. So the worktree is
 * never slower, and it wins on the rest: no second set of refs and config per copy, the
 * work branch lives in the mirror and is pushed straight to the real origin (a shared
 * clone's origin is the mirror), and git tracks the copies (`worktree list / prune`).
 * What makes jobs fast is neither, but reusing a copy: see {@link resetCopy}.
 */
export async function createCopy(ctx: CopyContext, paths: CopyPaths, target: CopyTarget): Promise<void> {
  const { git, signal } = ctx;
  await removeCopy(ctx, paths);
  // Detached first: `worktree add -B` refuses a branch that is still checked out in a free
  // pool slot (a previous attempt of this job), `checkout --ignore-other-worktrees` does
  // not; that slot is reset before its next use anyway. --force: the path may still be
  // registered from a copy whose directory was deleted.
  const add = ['worktree', 'add', '--force', '--no-checkout', '--detach', '--quiet', paths.dir, target.startSha];
  await locked(ctx, () => git.run(add, { cwd: ctx.mirrorDir, signal }));
  if (target.sparse !== null) await setSparse(ctx, paths.dir, target.sparse);
  await git.run(['reset', '--hard', '--quiet'], { cwd: paths.dir, signal });
  await git.run(['checkout', '--quiet', '--ignore-other-worktrees', '-B', target.branch], { cwd: paths.dir, signal });
}

// Left behind by an agent's interrupted git command; any of them would block or confuse
// the reset. Safe to delete: we hold the slot, and the agent's process group is gone.
export const leftoverGitState = [
  'index.lock',
  'MERGE_HEAD',
  'MERGE_MSG',
  'CHERRY_PICK_HEAD',
  'REVERT_HEAD',
  'BISECT_LOG',
  'rebase-merge',
  'rebase-apply',
  'sequencer',
];

/**
 * Resets a pooled copy for its next job, touching only what differs: `checkout --force`
 * rewrites the files that changed, `clean -ffdx` removes untracked and ignored files but
 * the {@link keptDependencyDirs}. Resolves to false when the directory is not a worktree
 * of this mirror any more (the caller then recreates it).
 */
export async function resetCopy(
  ctx: CopyContext,
  paths: CopyPaths,
  target: CopyTarget,
  previous: CopyState,
): Promise<boolean> {
  const { git, signal } = ctx;
  const gitDir = await worktreeGitDir(ctx, paths.dir);
  if (gitDir === undefined) return false;
  await restoreWritable(paths.dir, previous.readOnly);
  for (const name of leftoverGitState) await rm(join(gitDir, name), { recursive: true, force: true });
  await git.run(
    [
      'checkout',
      '--force',
      '--ignore-other-worktrees',
      '--no-recurse-submodules',
      '--quiet',
      '-B',
      target.branch,
      target.startSha,
    ],
    {
      cwd: paths.dir,
      signal,
    },
  );
  if (target.sparse === null) {
    if (previous.sparse !== null) await git.run(['sparse-checkout', 'disable'], { cwd: paths.dir, signal });
  } else if (sameSparse(previous.sparse, target.sparse)) {
    // Even with the same patterns: git clears the skip-worktree bit of an excluded file
    // that an agent wrote, and the checkout above then restored its real content.
    await git.run(['sparse-checkout', 'reapply'], { cwd: paths.dir, signal });
  } else {
    await setSparse(ctx, paths.dir, target.sparse);
  }
  // Last, so it also takes the directories that sparse checkout emptied.
  // Dependencies are kept only where an install step wrote them (its record, outside the
  // copy, lists them): a node_modules an agent made anywhere else is thrown away with the rest.
  // ... and only from a clean install: one that ran after an agent did (a lifecycle script
  // reading the agent's files) is not kept.
  const record = await (await installRecords()).readInstallRecord(installStampPath(paths));
  const installed = record?.clean === true ? record.dirs : [];
  const keep = installed.flatMap((dir) => ['-e', `/${dir}/`]);
  await git.run(['clean', '-ffdx', '--quiet', ...keep], { cwd: paths.dir, signal });
  return true;
}

/**
 * Removes a copy: permissions restored, worktree unregistered, directory deleted, state
 * file gone. Safe on a copy that is half-created or already gone.
 */
export async function removeCopy(ctx: CopyContext, paths: CopyPaths): Promise<void> {
  const exists = await stat(paths.dir).then(
    () => true,
    () => false,
  );
  if (exists) {
    await restoreWritable(paths.dir, (await readState(paths)).readOnly).catch(() => undefined);
    // Unregisters it too; when the copy is too broken for git, removeTree below still
    // deletes it and the next `worktree add --force` or `worktree prune` drops the entry.
    await locked(ctx, () =>
      ctx.git.run(['worktree', 'remove', '--force', '--force', paths.dir], { cwd: ctx.mirrorDir }),
    ).catch(() => undefined);
    await removeTree(paths.dir);
  }
  await rm(installStampPath(paths), { force: true });
  await removeState(paths);
}

/** Tracked files present in the copy (sparse-excluded entries left out), relative, `/`-separated. */
export async function checkedOutFiles(ctx: CopyContext, dir: string): Promise<string[]> {
  const output = await ctx.git.stdout(['ls-files', '-z', '-t'], { cwd: dir, maxBytes: listingBytes });
  // `-t` prefixes a status letter; `S` marks skip-worktree, i.e. excluded by sparse checkout.
  return splitNul(output)
    .filter((entry) => !entry.startsWith('S '))
    .map((entry) => entry.slice(2));
}

/** Which of `paths` (literal, relative) git tracks in the copy. */
export async function trackedAmong(ctx: CopyContext, dir: string, paths: readonly string[]): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const specs = paths.map((path) => `:(literal)${path}`);
  const output = await ctx.git.stdout(['ls-files', '-z', '--', ...specs], { cwd: dir, maxBytes: listingBytes });
  return new Set(splitNul(output));
}

async function setSparse(ctx: CopyContext, dir: string, patterns: readonly string[]): Promise<void> {
  await ctx.git.run(['sparse-checkout', 'set', '--no-cone', ...patterns], { cwd: dir, signal: ctx.signal });
}

/**
 * The copy's own git dir, or undefined when it is not a worktree of this mirror: an agent
 * can rewrite the `.git` file, and a reset must never run against some other repository.
 */
export async function worktreeGitDir(ctx: CopyContext, dir: string): Promise<string | undefined> {
  try {
    const output = await ctx.git.stdout(['rev-parse', '--absolute-git-dir'], { cwd: dir });
    const gitDir = output.trim().split('\n').at(-1) ?? '';
    const inside = relative(join(await realpath(ctx.mirrorDir), 'worktrees'), gitDir);
    return inside !== '' && !inside.startsWith('..') && !inside.includes(sep) ? gitDir : undefined;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'cancelled') throw error;
    return undefined;
  }
}

function sameSparse(a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === null || b === null) return a === b;
  return a.length === b.length && a.every((pattern, i) => pattern === b[i]);
}
