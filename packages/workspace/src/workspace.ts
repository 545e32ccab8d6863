import { join } from 'node:path';
import { buildAgentView, type AgentView, type AgentViewOptions } from './agent-view.js';
import { addedContent } from './added-content.js';
import { commitChange, fingerprint, pushSource } from './commit.js';
import { makeGradingCopy, type GradingCopy } from './grading-copy.js';
import { openCopy, type WorkspaceParts } from './open-copy.js';
import { releaseCopy } from './release.js';
import { resetToStart, restoreFiles } from './restore-copy.js';
import { installStampPath } from './working-copy.js';

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
   * A copy of the files as they stand now, for the verifier alone (hidden tests are applied
   * there, never in this copy): no `.git`, beside this copy, removed by its `remove()`.
   */
  gradingCopy(): Promise<GradingCopy>;
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

/**
 * Wraps a prepared copy into the {@link Workspace} the pipeline uses. Each operation lives in
 * the file of its kind: committing and pushing in `commit.ts`, putting files back in
 * `restore-copy.ts`, the secret scan's input in `added-content.ts`, the end in `release.ts`.
 */
export function openWorkspace(parts: WorkspaceParts): Workspace {
  const copy = openCopy(parts);
  const { ctx, paths } = copy;
  const changedFiles = () => copy.changedSince(parts.forkSha);
  let released = false;
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
      await copy.restore();
      return buildAgentView(ctx.git, {
        copyDir: paths.dir,
        gitDir: parts.gitDir,
        mirrorDir: ctx.mirrorDir,
        branch: parts.branch,
        readOnly: options.readOnly ?? [],
        installStamp: installStampPath(paths),
        signal: ctx.signal,
        remap: options.remap,
        objectsDir: parts.historyObjects,
      });
    },
    restoreGitLink: copy.restore,
    gradingCopy: () => makeGradingCopy(paths.dir),
    resetToStart: () => resetToStart(copy),
    pushSource: () => pushSource(copy),
    fingerprint: () => fingerprint(copy),
    addedContent: (options = {}) => addedContent(copy, options),
    restoreFiles: (files) => restoreFiles(copy, files),
    baselineFile: (key) => join(`${ctx.mirrorDir}.baselines`, `${parts.baseSha}-${key}.json`),
    outOfScopeChanges: async () => (await changedFiles()).filter(copy.outOfScope),
    commit: (message, author) => commitChange(copy, message, author),
    async release(opts = {}) {
      if (released) return;
      released = true;
      await releaseCopy(copy, opts);
    },
  };
}
