import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readlink, realpath, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { CodefleetError, isMemoryFile, memoryDir } from '@codefleet/core';
import {
  buildAgentView,
  removeAgentView,
  restoreGitLink,
  viewDir,
  type AgentView,
  type AgentViewOptions,
} from './agent-view.js';
import { copyWorktreeRules, guardConfigFile } from './config-guard.js';
import { lastObjectId, splitNul } from './git.js';
import { readLock, unlock, updateLock, type LockHolder } from './lock-file.js';
import { guardMirrorConfig } from './mirror.js';
import { readState, writeState, type CopyPaths } from './pool.js';
import { refuseConvertedBlobs } from './raw-content.js';
import { createScopeMatcher, restoreWritable, type Scope } from './scope.js';
import {
  codefleetDir,
  installStampPath,
  keptDependencyDirs,
  leftoverGitState,
  listingBytes,
  locked,
  removeCopy,
  worktreeGitDir,
  type CopyContext,
} from './working-copy.js';

/** A job's working copy, ready for the agent: on the work branch, scoped, with its context files. */
export interface Workspace {
  /** The job that holds the copy. */
  readonly jobId: string;
  /** Absolute path of the working copy; the agent's working directory. */
  readonly dir: string;
  readonly branch: string;
  readonly baseBranch: string;
  /** Head of `origin/<baseBranch>` at prepare time. */
  readonly baseSha: string;
  /** The commit the copy was checked out at: {@link existingRemoteSha} when set, else {@link baseSha}. */
  readonly startSha: string;
  /** The remote work branch's sha when prepare() found it already existing (a retry converges on it), else undefined. */
  readonly existingRemoteSha?: string;
  /** Context paths not written because the repository tracks them already (its own file is kept). */
  readonly skippedContext: string[];
  /** Context paths written into the copy; never reported as changes, never committed. */
  readonly contextFiles: string[];
  /** A pool slot reused by later jobs (`reuse: true`), rather than a copy for this job only. */
  readonly pooled: boolean;
  /**
   * Files changed vs. the base (tracked modifications including commits made in the copy,
   * deletions, and untracked files that are not ignored, minus context files), sorted. "The
   * base" is where the work branch forked from `baseBranch`, so on a retry the files of
   * commits already pushed to the work branch count too: a retry whose earlier attempt did
   * the work still has something to publish.
   */
  changedFiles(): Promise<string[]>;
  /**
   * Puts `files` back as they are in the copy's HEAD (the change's start); those not in HEAD
   * are removed. For a formatter's rewrites of files the change never touched.
   */
  restoreFiles(files: readonly string[]): Promise<void>;
  /**
   * Where a verification baseline of this repository's base commit under a plan (`key`) is
   * cached: outside every working copy, beside the repository's mirror.
   */
  baselineFile(key: string): string;
  /**
   * The changed files (as {@link changedFiles}) that the scope forbids: under `exclude` or
   * `read` patterns. Permissions cannot stop every write (root ignores them, a commit by
   * the agent goes around them), so the pipeline checks this before publishing.
   */
  outOfScopeChanges(): Promise<string[]>;
  /**
   * Stages everything except context files and out-of-scope changes (whatever the agent
   * staged itself is unstaged first) and commits; returns the new sha, or undefined when
   * nothing changed. First the git config the push will read (the mirror's and this
   * copy's own) is brought back to what codefleet wrote, whatever the agent changed there.
   *
   * Git stores every file byte for byte as it is in the copy (no attribute converts it):
   * the commit holds what was verified.
   *
   * @throws {CodefleetError} `workspace_failed` when the copy's `.git` no longer points
   * into its mirror, or when a committed blob differs from its file after all.
   */
  commit(message: string, author: { name: string; email: string }): Promise<string | undefined>;
  /**
   * Where install steps record the dependency hash they installed (outside the copy): pass
   * it to verification as `installStamp`. `node_modules` survives into the next job only
   * with it.
   */
  readonly installStamp: string;
  /**
   * Where package managers fetched for runs are kept (`provideManager`), shared by every
   * copy on this host and outside all of them; runs are shown it read-only.
   */
  readonly toolsDir: string;
  /**
   * A git directory to push the work branch's head from, and that head: a bare repository
   * made for this push, whose config codefleet alone wrote, reading the mirror's objects
   * through an alternate. The push then reads no config another job's agent could have
   * written into the shared mirror meanwhile (without a sandbox, it can).
   */
  pushSource(): Promise<{ gitDir: string; sha: string }>;
  /**
   * A fingerprint of the change as it stands (every changed path and the sha256 of its
   * content or link target): taken when verification passed and again before the commit,
   * so what is pushed is the tree that was verified.
   */
  fingerprint(): Promise<string>;
  /**
   * What the work branch adds since the base, file by file (added lines only): what must be
   * scanned for secrets before a push. Past `maxFiles` files or 32 MiB in one file it throws
   * (`workspace_failed`, permanent): what cannot be scanned is not pushed. Read by
   * codefleet's own git from the mirror's objects.
   */
  addedContent(options?: { maxFiles?: number }): Promise<{ file: string; added: string }[]>;
  /**
   * What a sandboxed run of this job may see and write (see {@link AgentView}): the copy,
   * its read-only parts, and a git directory of the job's own in place of the shared one.
   * Rebuilt on every call, from the copy's committed state.
   */
  agentView(options?: AgentViewOptions): Promise<AgentView>;
  /**
   * Puts the copy back at {@link startSha} for another agent (the next escalation tier): the
   * work branch and every tracked file as they were, untracked files removed. Kept: the
   * context files and `.codefleet/`, and what git ignores (installed dependencies, build
   * output), as between two fix attempts, so the next verification starts warm.
   *
   * @throws {CodefleetError} `workspace_failed` when the copy's `.git` no longer points into its mirror.
   */
  resetToStart(): Promise<void>;
  /**
   * Puts the copy's `.git` link (and the worktree's own back-links) as codefleet wrote them;
   * call after every run that could write the copy, before codefleet's own git reads it.
   */
  restoreGitLink(): Promise<void>;
  /**
   * Ends the job's use: pooled copies are returned to the pool (reset later), non-pooled ones
   * removed; keep=true leaves it for inspection (made writable again, skipped by the sweeper
   * and by later jobs until its `.lock` file is deleted). Does nothing once the sweeper
   * has taken the copy away.
   */
  release(opts?: { keep?: boolean }): Promise<void>;
}

/** Everything {@link openWorkspace} wraps. */
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
  /** See {@link Workspace.toolsDir}. */
  toolsDir: string;
}

/** Wraps a prepared copy into the {@link Workspace} the pipeline uses. */
export function openWorkspace(parts: WorkspaceParts): Workspace {
  const { ctx, paths, holder } = parts;
  const git = (args: readonly string[], extra: { okExitCodes?: number[]; env?: Record<string, string> } = {}) =>
    ctx.git.run(args, { cwd: paths.dir, outputBytes: listingBytes, ...extra });
  const contextSet = new Set(parts.contextFiles);
  const excluded = createScopeMatcher(parts.scope?.exclude ?? []);
  const readOnly = createScopeMatcher(parts.scope?.read ?? []);
  const outOfScope = (file: string) => excluded(file) || readOnly(file);
  let released = false;

  // Changed against `since`: tracked differences (commits since then included) and
  // untracked files that are not ignored, minus the context files. Untracked dependency
  // directories never count, ignored by the repository or not: a pooled copy keeps them
  // from the previous job, and they are never part of the work. Nor does codefleet's own
  // untracked `.codefleet/` (task file, the agents' prompt and feedback files); files the
  // repository itself tracks there still count, and so do new memory bank files.
  const dependencyDirs = [...keptDependencyDirs.map((name) => `--exclude=${name}/`), `--exclude=/${codefleetDir}/`];
  const changedSince = async (since: string) => {
    // stdout alone: git's warnings (a CRLF conversion notice) are never read as paths.
    const listing = (args: string[]) => ctx.git.stdout(args, { cwd: paths.dir, maxBytes: listingBytes });
    const tracked = await listing(['diff', '--name-only', '-z', '--no-renames', since, '--']);
    const untracked = await listing(['ls-files', '-z', '--others', '--exclude-standard', ...dependencyDirs]);
    // New memory bank files (`.codefleet/memory/*.md`) are the one part of `.codefleet/`
    // that is the repository's: a proposed update, listed in the PR body (never silent).
    const memory = splitNul(
      await listing(['ls-files', '-z', '--others', '--exclude-standard', '--', `:(literal)${memoryDir}/`]),
    ).filter(isMemoryFile);
    // `dir/`: an untracked directory holding a git repository of its own (an agent's clone);
    // git would add it as a gitlink, so it is never part of the work.
    const files = new Set([
      ...splitNul(tracked),
      ...splitNul(untracked).filter((file) => !file.endsWith('/')),
      ...memory,
    ]);
    return [...files].filter((file) => !contextSet.has(file)).sort();
  };
  const changedFiles = () => changedSince(parts.forkSha);
  const restore = async () => {
    await restoreGitLink(paths.dir, parts.gitDir);
    // The repositories of tracked submodules: a run can make one (git init) with a config
    // of its own; gone, nothing of it survives into codefleet's git or the next job.
    const index = await ctx.git.stdout(['ls-files', '-s', '-z'], { cwd: paths.dir, maxBytes: listingBytes });
    for (const entry of splitNul(index)) {
      const match = /^160000 [0-9a-f]+ \d\t(.+)$/s.exec(entry);
      if (match?.[1] !== undefined) await removeInsideCopy(paths.dir, join(match[1], '.git'));
    }
  };

  return {
    jobId: parts.jobId,
    dir: paths.dir,
    branch: parts.branch,
    baseBranch: parts.baseBranch,
    baseSha: parts.baseSha,
    startSha: parts.startSha,
    ...(parts.existingRemoteSha === undefined ? {} : { existingRemoteSha: parts.existingRemoteSha }),
    skippedContext: [...parts.skippedContext],
    contextFiles: [...parts.contextFiles],
    pooled: paths.pooled,
    installStamp: installStampPath(paths),
    toolsDir: parts.toolsDir,

    changedFiles,

    async agentView(options = {}) {
      await restore();
      return buildAgentView(ctx.git, {
        copyDir: paths.dir,
        gitDir: parts.gitDir,
        mirrorDir: ctx.mirrorDir,
        branch: parts.branch,
        readOnly: options.readOnly ?? [],
        installStamp: installStampPath(paths),
        signal: ctx.signal,
        remap: options.remap,
      });
    },

    restoreGitLink: restore,

    async resetToStart() {
      await restore();
      const gitDir = await worktreeGitDir(ctx, paths.dir);
      if (gitDir === undefined) {
        throw new CodefleetError(
          'workspace_failed',
          `the working copy ${paths.dir} is no longer a worktree of its mirror (its .git was changed); not reset`,
          { verdict: 'permanent' },
        );
      }
      // An agent's interrupted git command (a rebase, a lock) would stop the reset.
      for (const name of leftoverGitState) await rm(join(gitDir, name), { recursive: true, force: true });
      await git(['reset', '--hard', '--quiet', parts.startSha]);
      const keep = [
        ...parts.contextFiles.map((file) => `/${file}`),
        `/${codefleetDir}/`,
        ...keptDependencyDirs.map((name) => `${name}/`),
      ];
      await git(['clean', '-ffd', '--quiet', ...keep.flatMap((pattern) => ['-e', pattern])]);
    },

    async pushSource() {
      const sha = lastObjectId(
        await ctx.git.stdout(['rev-parse', `refs/heads/${parts.branch}`], { cwd: ctx.mirrorDir }),
      );
      if (sha === undefined)
        throw new CodefleetError('workspace_failed', `the work branch ${parts.branch} has no commit to push`);
      const gitDir = join(viewDir(paths.dir), 'push.git');
      await rm(gitDir, { recursive: true, force: true });
      await ctx.git.run(['init', '--quiet', '--bare', gitDir], { cwd: ctx.mirrorDir, signal: ctx.signal });
      await writeFile(
        join(gitDir, 'objects', 'info', 'alternates'),
        `${await realpath(join(ctx.mirrorDir, 'objects'))}\n`,
      );
      return { gitDir, sha };
    },

    async fingerprint() {
      const hash = createHash('sha256');
      const files = await changedFiles();
      // Too large to commit is refused before hashing: a sparse file of a terabyte would
      // otherwise hold the worker for hours.
      await refuseHugeFiles(paths.dir, files);
      for (const file of files) {
        if (ctx.signal?.aborted) throw new CodefleetError('cancelled', 'stopped while fingerprinting the change');
        const path = join(paths.dir, file);
        const info = await lstat(path).catch(() => undefined);
        // Streamed, not read whole: a changed file may be large.
        const content =
          info === undefined
            ? 'deleted'
            : info.isSymbolicLink()
              ? `link:${await readlink(path)}`
              : info.isFile()
                ? await fileHash(path)
                : `type:${info.mode}`;
        hash.update(`${file}\0${content}\0`);
      }
      return hash.digest('hex');
    },

    async addedContent(options = {}) {
      await restore();
      const range = [parts.forkSha, 'HEAD'];
      const files = splitNul(
        await ctx.git.stdout(['diff', '--name-only', '-z', '--no-renames', ...range, '--'], {
          cwd: paths.dir,
          maxBytes: listingBytes,
        }),
      );
      const maxFiles = options.maxFiles ?? 5_000;
      // What cannot be scanned is not pushed: a cap that skipped the rest would be a way past the scan.
      if (files.length > maxFiles) {
        throw new CodefleetError(
          'workspace_failed',
          `the change touches ${files.length} files; at most ${maxFiles} are scanned for secrets before a push, so it is not pushed`,
          { verdict: 'permanent' },
        );
      }
      const out: { file: string; added: string }[] = [];
      for (const file of files) {
        // --text: a binary file's bytes are scanned too; -U0: only what the change adds.
        const diff = await ctx.git
          .stdout(
            [
              'diff',
              '--no-color',
              '--no-ext-diff',
              '--no-textconv',
              '--text',
              '-U0',
              ...range,
              '--',
              `:(literal)${file}`,
            ],
            { cwd: paths.dir, maxBytes: maxScannedBytes },
          )
          .catch((error: unknown) => {
            if ((error as { message?: string }).message?.includes('printed more than') !== true) throw error;
            throw new CodefleetError(
              'workspace_failed',
              `${file} adds more than ${maxScannedBytes / 1024 / 1024} MiB, more than is scanned for secrets before a push; it is not pushed`,
              { verdict: 'permanent' },
            );
          });
        const added = diff
          .split('\n')
          .filter((line) => line.startsWith('+') && !line.startsWith('+++ '))
          .map((line) => line.slice(1))
          .join('\n');
        out.push({ file, added });
      }
      return out;
    },

    async restoreFiles(files) {
      if (files.length === 0) return;
      await restore();
      const inHead = new Set(
        splitNul(
          await ctx.git.stdout(['ls-tree', '-r', '-z', '--name-only', 'HEAD'], {
            cwd: paths.dir,
            maxBytes: listingBytes,
          }),
        ),
      );
      const tracked = files.filter((file) => inHead.has(file));
      for (const file of files.filter((file) => !inHead.has(file))) await removeInsideCopy(paths.dir, file);
      if (tracked.length === 0) return;
      const list = join(parts.gitDir, 'codefleet-restore-paths');
      await writeFile(list, tracked.map((path) => `${path}\0`).join(''));
      try {
        await git(['--literal-pathspecs', 'checkout', 'HEAD', `--pathspec-from-file=${list}`, '--pathspec-file-nul']);
      } finally {
        await rm(list, { force: true });
      }
    },

    baselineFile(key) {
      return join(`${ctx.mirrorDir}.baselines`, `${parts.baseSha}-${key}.json`);
    },

    async outOfScopeChanges() {
      return (await changedFiles()).filter(outOfScope);
    },

    async commit(message, author) {
      await restore();
      const gitDir = await worktreeGitDir(ctx, paths.dir);
      if (gitDir === undefined) {
        throw new CodefleetError(
          'workspace_failed',
          `the working copy ${paths.dir} is no longer a worktree of its mirror (its .git was changed); nothing committed`,
          { verdict: 'permanent' },
        );
      }
      await locked(ctx, () => guardMirrorConfig(ctx.git, ctx.mirrorDir, parts.repoUrl, ctx.signal));
      await guardConfigFile(ctx.git, join(gitDir, 'config.worktree'), copyWorktreeRules, ctx.signal);
      const allowed = (await changedSince('HEAD')).filter((file) => !outOfScope(file));
      await refuseHugeFiles(paths.dir, allowed);
      // Only what the agent may change: a fresh index, then exactly those paths, passed
      // through a file (no argv length limit) and taken literally (no glob magic).
      await git(['reset', '--quiet']);
      if (allowed.length > 0) {
        const list = join(gitDir, 'codefleet-commit-paths');
        await writeFile(list, allowed.map((path) => `${path}\0`).join(''));
        try {
          await git(['--literal-pathspecs', 'add', '--all', `--pathspec-from-file=${list}`, '--pathspec-file-nul']);
        } finally {
          await rm(list, { force: true });
        }
      }
      const staged = await git(['diff', '--cached', '--quiet'], { okExitCodes: [1] });
      if (staged.exitCode === 0) return undefined;
      const identity = {
        GIT_AUTHOR_NAME: author.name,
        GIT_AUTHOR_EMAIL: author.email,
        GIT_COMMITTER_NAME: author.name,
        GIT_COMMITTER_EMAIL: author.email,
      };
      await git(['commit', '--quiet', '--no-verify', '--no-gpg-sign', '-m', message], { env: identity });
      await refuseConvertedBlobs(ctx.git, paths.dir, ctx.signal);
      return lastObjectId(await ctx.git.stdout(['rev-parse', 'HEAD'], { cwd: paths.dir }));
    },

    async release(opts = {}) {
      if (released) return;
      released = true;
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
    },
  };
}

/** The most a file's diff may add and still be scanned for secrets (over it: not pushed). */
const maxScannedBytes = 32 * 1024 * 1024;

/** Larger files are never committed: GitHub refuses them, and git would copy them into the shared mirror first. */
const maxCommittedFileBytes = 100 * 1024 * 1024;

// Checked before `git add`, which would write the whole file into the mirror's object store.
async function refuseHugeFiles(dir: string, files: readonly string[]): Promise<void> {
  for (const file of files) {
    const info = await lstat(join(dir, file)).catch(() => undefined);
    if (info?.isFile() && info.size > maxCommittedFileBytes) {
      throw new CodefleetError(
        'forge_rejected',
        `${file} is ${Math.round(info.size / 1024 / 1024)} MB; files over ${maxCommittedFileBytes / 1024 / 1024} MB are not committed (GitHub refuses them). Nothing was committed`,
        {
          verdict: 'permanent',
          details: { file, bytes: info.size },
        },
      );
    }
  }
}

// Removes `rel` under `dir` unless a symlink on the way leads out of the copy.
async function removeInsideCopy(dir: string, rel: string): Promise<void> {
  const parent = await realpath(join(dir, rel, '..')).catch(() => undefined);
  const root = await realpath(dir);
  if (parent === undefined || (parent !== root && !parent.startsWith(`${root}/`))) return;
  await rm(join(parent, basename(rel)), { recursive: true, force: true });
}

async function fileHash(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function holdsLock(paths: CopyPaths, holder: LockHolder): Promise<boolean> {
  const state = await readLock(paths.lock);
  return state.kind === 'held' && state.holder.token === holder.token;
}
