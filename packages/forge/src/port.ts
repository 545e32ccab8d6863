/**
 * The forge port: where a finished job is published (a branch, a pull request); comments
 * and labels on issues are the {@link IssueTracker}'s. Adapters: `local` (a path or git URL
 * plus a SQLite record of pull requests and comments) and `github` (REST API + git push
 * with a credential helper; in `@codefleet/github`). The shapes follow GitHub's REST API.
 *
 * **Promises** (every adapter; the contract suite in `test/contract` checks them):
 * - Every write is an idempotent `ensure*`: calling it again with the same input, after a
 *   crash or a redelivered job, converges on the same state and never duplicates a pull
 *   request (nor, on the {@link IssueTracker}, a marked comment).
 * - `ensureBranch` is fenced: it only moves the branch when the remote still points at
 *   the sha the caller started from, so a stale worker cannot clobber a newer push.
 * - At most one open pull request per (repo, head), even under concurrent calls.
 * - Failures are `CodefleetError`s with a stable code: `git_conflict` (lease lost, push
 *   rejected as stale: permanent for this attempt), `forge_not_found` (no such repo,
 *   branch or pull request), `forge_rejected` (invalid input, refused push, auth),
 *   `network` / `git_failed` (transient), `cancelled` (the signal aborted).
 *
 * **Leaves out** (on purpose):
 * - Issues: comments and labels are the {@link IssueTracker}'s; what a producer reads of an
 *   issue (title, body, author, permission) is `GithubIssues`'.
 * - Merging, reviews, checks and branch deletion: codefleet opens pull requests, humans
 *   merge them. (`LocalForge.mergePullRequest` exists only to simulate that in tests.)
 * - Authentication: adapters receive ready credentials (environment, helper) from config.
 */
export interface Forge {
  /** Which adapter this is, for logs and `codefleet doctor`. */
  readonly kind: 'local' | 'github';

  /**
   * The URL (or path) working copies clone and fetch `repo` from. Never holds
   * credentials: a forge that needs them supplies a credential helper (see
   * `@codefleet/github`'s `githubCredentialEnv`), so the URL can be logged.
   */
  remoteUrl(repo: string): string;

  /** The sha `branch` points at on the repo's origin, or undefined when it does not exist. */
  findBranch(repo: string, branch: string, signal?: AbortSignal): Promise<{ sha: string } | undefined>;

  /**
   * Pushes `workdir`'s HEAD to `branch` on the repo's origin, fenced by a lease:
   * - `expectedSha: '<sha>'`: the remote branch must still point at that sha (the head
   *   this worker started from, read with {@link findBranch} when the job was claimed);
   * - `expectedSha` undefined: the remote branch must not exist yet.
   * A remote that already points at HEAD is success without a push (`updated: false`),
   * so retrying a push that landed converges. So is a remote whose tip has exactly
   * HEAD's tree (an earlier attempt's push of the same content, landed after its worker
   * died): `sha` is then that tip, which is what a pull request should name.
   * Otherwise a lease mismatch is `git_conflict`: another worker has published since, and
   * this one must stop; with `task` set, a tip that is only an earlier attempt's commit
   * of that task is a `git_conflict` naming it (`ownStaleTip`), which the task's lease
   * holder may replace by calling again with that sha as `expectedSha`.
   * There is deliberately no unfenced force push.
   */
  ensureBranch(req: EnsureBranchRequest): Promise<{ sha: string; updated: boolean }>;

  /**
   * Finds the open pull request whose head is `head` and updates its title, body, base
   * and draft flag, or creates it. Never a second open pull request for one head, also
   * when several workers call this at once. `head` and `base` must exist on the origin
   * (`forge_rejected` otherwise, as GitHub's 422).
   */
  ensurePullRequest(req: EnsurePullRequestRequest): Promise<PullRequest & { created: boolean }>;

  /**
   * The open pull request for `head`; when none is open, the most recently created one
   * (closed or merged), so callers can tell "merged" from "never opened".
   */
  findPullRequest(repo: string, head: string): Promise<PullRequest | undefined>;

  /** One pull request by number; `forge_not_found` when there is none. */
  getPullRequest(repo: string, number: number): Promise<PullRequest>;

  /**
   * Only the state of one pull request (GitHub: `GET /repos/{o}/{r}/pulls/{n}`, `merged` /
   * `state`): what a task's status is derived from (`taskStatus` in core). `signal` stops
   * the request (`cancelled`); `forge_not_found` when there is none. Callers that ask for
   * many bound and cache it (`createPullRequestStates`).
   */
  pullRequestState(repo: string, number: number, signal?: AbortSignal): Promise<PullRequestState>;
}

/**
 * Issues (and pull requests, which share their numbers) as a place to report: one marked
 * comment per role, edited in place, and labels. Adapters: GitHub's issues (`GithubIssues`,
 * in `@codefleet/github`) and the local forge, which also keeps comments on `task` targets
 * for work without an issue (CLI jobs). GitHub's issue requester writes through it; the
 * forge contract checks both adapters.
 *
 * Leaves out atomic `ensureComment` across processes on GitHub (list, then create): callers
 * keep one writer per task, which the queue lease and the worker's fencing provide.
 */
export interface IssueTracker {
  readonly kind: 'local' | 'github';

  /**
   * One comment per (target, marker): created, or edited in place (left alone when the
   * body is unchanged). The stored body starts with the hidden line
   * `<!-- codefleet:<marker> -->`, which is how the GitHub adapter finds it again; only
   * that first line counts, so a marker quoted further down a body is never matched.
   */
  ensureComment(req: EnsureCommentRequest): Promise<{ id: number; created: boolean }>;

  /** Comments on a target, oldest first, bodies as stored (marker line included). */
  listComments(repo: string, target: CommentTarget): Promise<Comment[]>;

  /**
   * Adds and removes labels on a target (adding one already there and removing one that
   * is absent are no-ops) and returns the resulting set, sorted. Names compare
   * case-insensitively, as on GitHub.
   */
  ensureLabels(req: EnsureLabelsRequest): Promise<{ labels: string[] }>;

  /** The labels on a target, sorted. */
  listLabels(repo: string, target: CommentTarget): Promise<string[]>;
}

/** Input of {@link Forge.ensureBranch}. */
export interface EnsureBranchRequest {
  /** A repo string the adapter understands (local: absolute path or git URL). */
  repo: string;
  /** A git working copy whose HEAD is pushed, or (with `sha`) a git directory holding `sha`. */
  workdir: string;
  /** The commit to push; default HEAD of `workdir`. */
  sha?: string;
  /** The branch on the origin, e.g. `ai/issue-7` (no `refs/heads/` prefix). */
  branch: string;
  /** The remote head this worker started from; undefined = the branch must not exist yet. */
  expectedSha?: string;
  /**
   * The task the commit publishes: the value of its `Codefleet-Task` trailer
   * (`taskTrailerValue` of the job's idempotency key). Lets a refused push recognise an
   * earlier attempt's commit of the same task on the branch; without it only the same
   * commit or the same tree converge.
   */
  task?: string;
  /** Aborting stops the push (its whole process group) with `cancelled`. */
  signal?: AbortSignal;
}

/** Input of {@link Forge.ensurePullRequest}. */
export interface EnsurePullRequestRequest {
  repo: string;
  /** The branch with the changes. */
  head: string;
  /** The branch to merge into, e.g. `main`. */
  base: string;
  /** At most 256 characters (GitHub's limit). */
  title: string;
  /** Markdown, stored verbatim; at most 65 536 characters (GitHub's limit). */
  body: string;
  /** Draft when the definition of done failed. */
  draft: boolean;
}

/** Input of {@link Forge.ensureComment}. */
export interface EnsureCommentRequest {
  repo: string;
  target: CommentTarget;
  /** Names the comment's role, e.g. `status` or `failure`: letters, digits, `._:/-`, ≤ 100. */
  marker: string;
  /** Markdown, stored verbatim after the marker line. */
  body: string;
}

/** Input of {@link Forge.ensureLabels}. */
export interface EnsureLabelsRequest {
  repo: string;
  target: CommentTarget;
  add?: readonly string[];
  remove?: readonly string[];
}

/**
 * What a comment or label is attached to. On GitHub issues and pull requests share one
 * number space and one comments API; `task` is for work without an issue (CLI jobs) and
 * exists only on forges that can hold it (local; GitHub rejects it with `forge_rejected`).
 */
export type CommentTarget =
  { kind: 'issue'; number: number } | { kind: 'pull'; number: number } | { kind: 'task'; key: string };

/** Lifecycle of a pull request. */
export type PullRequestState =
  /** Open for review; the only state `ensurePullRequest` updates. */
  | 'open'
  /** Closed without merging; a later `ensurePullRequest` for the head opens a new one. */
  | 'closed'
  /** Merged into its base. */
  | 'merged';

/** A pull request as the forge reports it. */
export interface PullRequest {
  /** Per repository, from 1. */
  number: number;
  /** Where a human opens it (`local://<repo>/pull/<n>` on the local forge). */
  url: string;
  title: string;
  body: string;
  head: string;
  base: string;
  state: PullRequestState;
  draft: boolean;
  /** The head branch's sha when the forge last saw it. */
  headSha?: string;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601; changes only when something did. */
  updatedAt: string;
  /** ISO 8601: when it was closed or merged, where the forge says (GitHub's `closed_at`). */
  closedAt?: string;
}

/** A comment as the forge reports it. */
export interface Comment {
  id: number;
  /** The full stored body, marker line included. */
  body: string;
  /** The marker from the body's first line, when it has one. */
  marker?: string;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601. */
  updatedAt: string;
}
