import { createHash } from 'node:crypto';
import { readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { CodefleetError, isMemoryFile } from '@codefleet/core';
import { restoreGitLink } from './agent-view.js';
import { splitNul, type GitResult } from './git.js';
import type { LockHolder } from './lock-file.js';
import type { CopyPaths } from './pool.js';
import { createScopeMatcher, type Scope } from './scope.js';
import { codefleetDir, keptDependencyDirs, listingBytes, worktreeGitDir, type CopyContext } from './working-copy.js';

/** Everything `openWorkspace` wraps. */
export interface WorkspaceParts {
  ctx: CopyContext;
  paths: CopyPaths;
  holder: LockHolder;
  jobId: string;
  /** The repository's URL or path, as the mirror's `origin` holds it. */
  repoUrl: string;
  branch: string;
  baseBranch: string;
  baseSha: string;
  startSha: string;
  existingRemoteSha?: string | undefined;
  /** What "changed vs. the base" is measured against (merge base of base and remote branch). */
  forkSha: string;
  contextFiles: string[];
  skippedContext: string[];
  scope?: Scope | undefined;
  /** The copy's own git directory in the mirror (`<mirror>/worktrees/<name>`), found when it was made. */
  gitDir: string;
  /** See `Workspace.toolsDir`. */
  toolsDir: string;
  /** A pinned job's own objects (see history.ts), which its runs read in place of the mirror's. */
  historyObjects?: string | undefined;
}

/** An open copy as every workspace operation reads it: its parts and what is derived from them once. */
export interface OpenCopy extends WorkspaceParts {
  /** Runs git in the copy, with room for file listings. */
  git(args: readonly string[], extra?: { okExitCodes?: number[]; env?: Record<string, string> }): Promise<GitResult>;
  /** Whether the scope forbids changing `file` (under `exclude` or `read`). */
  outOfScope(file: string): boolean;
  /**
   * Files changed against `since`: tracked differences (commits since then included) and
   * untracked files that are not ignored, minus the context files; sorted.
   */
  changedSince(since: string): Promise<string[]>;
  /** Puts the `.git` link back as codefleet wrote it and removes tracked submodules' repositories. */
  restore(): Promise<void>;
}

/** Derives the {@link OpenCopy} of `parts`. */
export function openCopy(parts: WorkspaceParts): OpenCopy {
  const { ctx, paths } = parts;
  const excluded = createScopeMatcher(parts.scope?.exclude ?? []);
  const readOnly = createScopeMatcher(parts.scope?.read ?? []);
  const swept: SweptIndex = {};
  const copy: OpenCopy = {
    ...parts,
    git: (args, extra = {}) => ctx.git.run(args, { cwd: paths.dir, outputBytes: listingBytes, ...extra }),
    outOfScope: (file) => excluded(file) || readOnly(file),
    changedSince: (since) => changedSince(copy, new Set(parts.contextFiles), since),
    restore: () => restore(copy, swept),
  };
  return copy;
}

// Untracked dependency directories never count, ignored by the repository or not: a pooled
// copy keeps them from the previous job, and they are never part of the work. Nor does
// codefleet's own untracked `.codefleet/` (task file, the agents' prompt and feedback files);
// files the repository itself tracks there still count, and so do new memory bank files.
const notTheWork = keptDependencyDirs.map((name) => `--exclude=${name}/`);

async function changedSince(copy: OpenCopy, contextFiles: ReadonlySet<string>, since: string): Promise<string[]> {
  // stdout alone: git's warnings (a CRLF conversion notice) are never read as paths.
  const listing = (args: string[]) => copy.ctx.git.stdout(args, { cwd: copy.paths.dir, maxBytes: listingBytes });
  const tracked = await listing(['diff', '--name-only', '-z', '--no-renames', since, '--']);
  // One listing of untracked files (one git process: each costs a fork of the worker), split
  // here: of `.codefleet/`, only new memory bank files (`.codefleet/memory/*.md`) are the
  // repository's, a proposed update listed in the PR body (never silent).
  const untracked = splitNul(await listing(['ls-files', '-z', '--others', '--exclude-standard', ...notTheWork]));
  const ours = (file: string) => file === `${codefleetDir}/` || file.startsWith(`${codefleetDir}/`);
  // `dir/`: an untracked directory holding a git repository of its own (an agent's clone);
  // git would add it as a gitlink, so it is never part of the work.
  const files = new Set([
    ...splitNul(tracked),
    ...untracked.filter((file) => !ours(file) && !file.endsWith('/')),
    ...untracked.filter(isMemoryFile),
  ]);
  return [...files].filter((file) => !contextFiles.has(file)).sort();
}

/** The gitlinks of the copy's index when it last held the bytes hashed to `index`. */
interface SweptIndex {
  index?: string;
  gitlinks?: string[];
}

async function restore(copy: OpenCopy, swept: SweptIndex): Promise<void> {
  await restoreGitLink(copy.paths.dir, copy.gitDir);
  // The repositories of tracked submodules: a run can make one (git init) with a config
  // of its own; gone, nothing of it survives into codefleet's git or the next job.
  for (const path of await gitlinks(copy, swept)) await removeInsideCopy(copy.paths.dir, join(path, '.git'));
}

/**
 * The paths of the gitlinks (submodules) in the copy's index. `ls-files -s` reads them from
 * the index alone, so while the index holds the same bytes (a hash of its content, not its
 * times) the last listing stands: a restore after each run of a job no longer spawns git.
 */
async function gitlinks(copy: OpenCopy, swept: SweptIndex): Promise<string[]> {
  const before = await indexHash(copy);
  if (before !== undefined && swept.index === before && swept.gitlinks !== undefined) return swept.gitlinks;
  const listing = await copy.ctx.git.stdout(['ls-files', '-s', '-z'], { cwd: copy.paths.dir, maxBytes: listingBytes });
  const found = splitNul(listing).flatMap((entry) => {
    const match = /^160000 [0-9a-f]+ \d\t(.+)$/s.exec(entry);
    return match?.[1] === undefined ? [] : [match[1]];
  });
  // Kept only when the index did not change while git read it: the listing is then its own.
  const after = await indexHash(copy);
  swept.index = after === before ? after : undefined;
  swept.gitlinks = found;
  return found;
}

async function indexHash(copy: OpenCopy): Promise<string | undefined> {
  const bytes = await readFile(join(copy.gitDir, 'index')).catch(() => undefined);
  return bytes === undefined ? undefined : createHash('sha256').update(bytes).digest('hex');
}

/**
 * The copy's git directory in the mirror, checked again before codefleet's git writes through
 * it: `undone` says what was not done when the copy's `.git` no longer points there.
 */
export async function ownGitDir(copy: OpenCopy, undone: string): Promise<string> {
  const gitDir = await worktreeGitDir(copy.ctx, copy.paths.dir);
  if (gitDir === undefined) {
    throw new CodefleetError(
      'workspace_failed',
      `the working copy ${copy.paths.dir} is no longer a worktree of its mirror (its .git was changed); ${undone}`,
      { verdict: 'permanent' },
    );
  }
  return gitDir;
}

/**
 * Runs git `args` with `pathspecs` taken from a NUL-separated file written for the call
 * (no argv length limit) into the copy's git directory `gitDir`, and removed afterwards.
 */
export async function withPathspecFile(
  copy: OpenCopy,
  gitDir: string,
  name: string,
  pathspecs: readonly string[],
  args: readonly string[],
): Promise<void> {
  const list = join(gitDir, name);
  await writeFile(list, pathspecs.map((path) => `${path}\0`).join(''));
  try {
    await copy.git(['--literal-pathspecs', ...args, `--pathspec-from-file=${list}`, '--pathspec-file-nul']);
  } finally {
    await rm(list, { force: true });
  }
}

/** Removes `rel` under `dir` unless a symlink on the way leads out of the copy. */
export async function removeInsideCopy(dir: string, rel: string): Promise<void> {
  const parent = await realpath(join(dir, rel, '..')).catch(() => undefined);
  const root = await realpath(dir);
  if (parent === undefined || (parent !== root && !parent.startsWith(`${root}/`))) return;
  await rm(join(parent, basename(rel)), { recursive: true, force: true });
}
