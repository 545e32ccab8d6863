import { lstat, rm } from 'node:fs/promises';
import { isAbsolute, join, normalize } from 'node:path';
import { openSqlite, type SqliteDatabase } from '@codefleet/sqlite';
import { CodefleetError, checkRepoRef, previewValue } from '@codefleet/core';
import { checkBody, checkBranch, checkLabel, checkPullRequestInput, checkSha, targetKey } from '../checks.js';
import { pushFenced, remoteBranches, type GitOptions } from '../git/git.js';
import { renderMarked } from '../marker.js';
import type {
  Comment,
  CommentTarget,
  EnsureBranchRequest,
  EnsureCommentRequest,
  EnsureLabelsRequest,
  EnsurePullRequestRequest,
  Forge,
  IssueTracker,
  PullRequest,
  PullRequestState,
} from '../port.js';
import { commentsOn, upsertComment } from './comments.js';
import { applyLabels, labelsOn } from './labels.js';
import { claimPullNumber } from './pull-numbers.js';
import {
  countCreations,
  findByHead,
  findByNumber,
  insertPullRequest,
  nextLocalNumber,
  settlePullRequest,
  updateOpenPullRequest,
} from './pull-requests.js';
import { prepareDatabase } from './schema.js';

/** Options of {@link createLocalForge}. */
export interface LocalForgeOptions {
  /** The SQLite file holding pull requests and comments; shared by every worker on the host. */
  dbPath: string;
  /** The complete environment git runs with (PATH, HOME, GIT_CONFIG_*); nothing is inherited. */
  gitEnv: Readonly<Record<string, string>>;
  /** Per git call (push, ls-remote). Default 120 000. */
  gitTimeoutMs?: number;
  /** The git binary; default `git` on `gitEnv.PATH`. */
  gitPath?: string;
  /** The clock for timestamps; tests pass a fixed one. */
  now?: () => Date;
}

/** The default per-call git timeout: a push over a slow link, not a hang. */
export const defaultGitTimeoutMs = 120_000;

/**
 * The local forge: a repository is an absolute path or a git URL, branches are pushed
 * straight to it, and pull requests, comments and labels live in one SQLite file (WAL),
 * safe for several worker processes on one host. Pull request numbers are claimed in the
 * origin (`refs/codefleet/pulls/<n>`), so workers on several hosts sharing an origin never
 * give two pull requests one number; their records stay in each host's file.
 *
 * Git refuses to push to the checked-out branch of a non-bare repository
 * (`forge_rejected`); point the forge at a bare origin (`git init --bare`), as the demo
 * does, or at a repository whose checked-out branch is not the work branch.
 */
export class LocalForge implements Forge, IssueTracker {
  readonly kind = 'local' as const;
  /** The local forge keeps its issues' comments and labels itself, in the same file. */
  readonly issues: IssueTracker = this;
  readonly #db: SqliteDatabase;
  readonly #git: GitOptions;
  readonly #now: () => Date;

  constructor(options: LocalForgeOptions) {
    const timeoutMs = options.gitTimeoutMs ?? defaultGitTimeoutMs;
    if (!(timeoutMs > 0)) throw new RangeError(`gitTimeoutMs must be > 0, got ${timeoutMs}`);
    this.#git = {
      env: options.gitEnv,
      timeoutMs,
      ...(options.gitPath === undefined ? {} : { gitPath: options.gitPath }),
    };
    this.#now = options.now ?? (() => new Date());
    this.#db = openSqlite(options.dbPath);
    prepareDatabase(this.#db);
  }

  remoteUrl(repo: string): string {
    return resolveRepo(repo).remote;
  }

  async findBranch(repo: string, branch: string, signal?: AbortSignal): Promise<{ sha: string } | undefined> {
    const { remote } = resolveRepo(repo);
    checkBranch(branch);
    const sha = (await remoteBranches(this.#git, remote, [branch], signal)).get(branch);
    return sha === undefined ? undefined : { sha };
  }

  async ensureBranch(req: EnsureBranchRequest): Promise<{ sha: string; updated: boolean }> {
    const { remote } = resolveRepo(req.repo);
    checkBranch(req.branch);
    if (req.expectedSha !== undefined) checkSha(req.expectedSha);
    const push = () =>
      pushFenced(this.#git, {
        workdir: req.workdir,
        remote,
        branch: req.branch,
        expectedSha: req.expectedSha,
        signal: req.signal,
        ...(req.sha === undefined ? {} : { sha: req.sha }),
        ...(req.task === undefined ? {} : { task: req.task }),
      });
    try {
      return await push();
    } catch (error) {
      // A push killed with its worker leaves the origin's ref lock behind, and git never
      // expires it: on a local origin, an old one is removed and the push tried again.
      if (!isAbsolute(remote) || !(await removeStaleRefLock(remote, req.branch))) throw error;
      return push();
    }
  }

  async ensurePullRequest(req: EnsurePullRequestRequest): Promise<PullRequest & { created: boolean }> {
    const { key, remote } = resolveRepo(req.repo);
    checkPullRequestInput(req);
    // GitHub answers 422 for a head or base that does not exist; so does the local forge,
    // which also records the head's sha as GitHub does.
    const branches = await remoteBranches(this.#git, remote, [req.head, req.base]);
    const headSha = branches.get(req.head);
    if (headSha === undefined)
      throw new CodefleetError('forge_rejected', `head branch ${req.head} does not exist on ${key}; push it first`);
    if (!branches.has(req.base))
      throw new CodefleetError('forge_rejected', `base branch ${req.base} does not exist on ${key}`);
    const input = {
      repo: key,
      head: req.head,
      base: req.base,
      title: req.title,
      body: req.body,
      draft: req.draft,
      headSha,
    };
    const updated = this.#store(() => updateOpenPullRequest(this.#db, input, this.#stamp()));
    if (updated !== undefined) return updated;
    const number = await claimPullNumber(
      this.#git,
      remote,
      this.#store(() => nextLocalNumber(this.#db, key)),
    );
    return this.#store(() => insertPullRequest(this.#db, input, number, this.#stamp()));
  }

  async findPullRequest(repo: string, head: string): Promise<PullRequest | undefined> {
    const { key } = resolveRepo(repo);
    checkBranch(head, 'head branch');
    return this.#store(() => findByHead(this.#db, key, head));
  }

  async getPullRequest(repo: string, number: number): Promise<PullRequest> {
    const { key } = resolveRepo(repo);
    targetKey({ kind: 'pull', number });
    const found = this.#store(() => findByNumber(this.#db, key, number));
    if (found === undefined) throw new CodefleetError('forge_not_found', `no pull request #${number} in ${key}`);
    return found;
  }

  async pullRequestState(repo: string, number: number, signal?: AbortSignal): Promise<PullRequestState> {
    if (signal?.aborted) throw new CodefleetError('cancelled', `stopped before reading pull request #${number}`);
    return (await this.getPullRequest(repo, number)).state;
  }

  async ensureComment(req: EnsureCommentRequest): Promise<{ id: number; created: boolean }> {
    const { key, target } = await this.#target(req.repo, req.target);
    const stored = renderMarked(req.marker, req.body);
    checkBody(stored);
    return this.#store(() => upsertComment(this.#db, key, target, req.marker, stored, this.#stamp()));
  }

  async listComments(repo: string, target: CommentTarget): Promise<Comment[]> {
    const resolved = await this.#target(repo, target);
    return this.#store(() => commentsOn(this.#db, resolved.key, resolved.target));
  }

  async ensureLabels(req: EnsureLabelsRequest): Promise<{ labels: string[] }> {
    const { key, target } = await this.#target(req.repo, req.target);
    const add = (req.add ?? []).map(checkLabel);
    const remove = (req.remove ?? []).map(checkLabel);
    return { labels: this.#store(() => applyLabels(this.#db, key, target, add, remove)) };
  }

  async listLabels(repo: string, target: CommentTarget): Promise<string[]> {
    const resolved = await this.#target(repo, target);
    return this.#store(() => labelsOn(this.#db, resolved.key, resolved.target));
  }

  /** How many pull requests were ever created for `head`: tests assert exactly one. */
  pullRequestCreations(repo: string, head: string): number {
    const { key } = resolveRepo(repo);
    return this.#store(() => countCreations(this.#db, key, head));
  }

  /**
   * Marks a pull request merged, as a human merging it would; no git merge happens. For
   * tests and for deriving a task's status from observable facts.
   */
  mergePullRequest(repo: string, number: number): PullRequest {
    const { key } = resolveRepo(repo);
    return this.#store(() => settlePullRequest(this.#db, key, number, 'merged', this.#stamp()));
  }

  /** Marks a pull request closed without merging; the next `ensurePullRequest` opens a new one. */
  closePullRequest(repo: string, number: number): PullRequest {
    const { key } = resolveRepo(repo);
    return this.#store(() => settlePullRequest(this.#db, key, number, 'closed', this.#stamp()));
  }

  /** Closes the database. Pending git calls are not affected. */
  close(): void {
    this.#db.close();
  }

  #stamp(): string {
    return this.#now().toISOString();
  }

  /** Resolves a target; a pull request must exist, as GitHub answers 404 otherwise. */
  async #target(repo: string, target: CommentTarget): Promise<{ key: string; target: string }> {
    const { key } = resolveRepo(repo);
    const resolved = targetKey(target);
    if (target.kind === 'pull') await this.getPullRequest(repo, target.number);
    return { key, target: resolved };
  }

  /**
   * Runs one store operation. The single place SQLite failures are mapped: a lock held
   * past busy_timeout by another process is transient; anything else is a bug or a
   * broken file and propagates as is.
   */
  #store<T>(operation: () => T): T {
    try {
      return operation();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string' && /^SQLITE_(?:BUSY|LOCKED)/.test(code)) {
        throw new CodefleetError('forge_unavailable', `local forge database is busy (${code})`, { cause: error });
      }
      throw error;
    }
  }
}

/** Opens the local forge; `close()` it when done. */
export function createLocalForge(options: LocalForgeOptions): LocalForge {
  return new LocalForge(options);
}

/**
 * Checks a repo string for the local forge: `key` names it in the store, `remote` is
 * what git is given. GitHub `owner/name` belongs to the GitHub adapter.
 */
/** A ref lock older than this was left by a dead push: a live one holds it for milliseconds. */
const staleRefLockMs = 30_000;

async function removeStaleRefLock(origin: string, branch: string): Promise<boolean> {
  const lock = join(origin, 'refs', 'heads', `${branch}.lock`);
  const info = await lstat(lock).catch(() => undefined);
  if (info === undefined || !info.isFile() || Date.now() - info.mtimeMs < staleRefLockMs) return false;
  await rm(lock, { force: true });
  return true;
}

function resolveRepo(repo: string): { key: string; remote: string } {
  const ref = checkRepoRef(repo);
  if (typeof ref === 'string') throw new CodefleetError('forge_rejected', `invalid repo ${previewValue(repo)}: ${ref}`);
  if (ref.kind === 'github') {
    throw new CodefleetError(
      'forge_rejected',
      `the local forge takes an absolute path or a git URL, got GitHub repo ${repo}; use the github forge`,
    );
  }
  if (ref.kind === 'url') return { key: ref.url, remote: ref.url };
  // One repo, one key: `/x/repo/` and `/x//repo` are the same origin as `/x/repo`.
  const path = normalize(ref.path).replace(/(?<=.)\/+$/, '');
  return { key: path, remote: path };
}
