import type { CommentFacts, EventFacts, IssueFacts, PullFacts, ReviewCommentFacts } from './shapes.js';

// What the GitHub STAND-IN keeps per repository; the API shapes are built from it on
// every answer (shapes.ts).

export type Permission = 'admin' | 'maintain' | 'write' | 'triage' | 'read' | 'none';
export type StandInIssue = IssueFacts;
export type StandInComment = CommentFacts;
export interface StandInPull extends PullFacts {
  node_id: string;
  html_url: string;
  /** Set when a person merged it ({@link GithubStandIn.mergePull}); GitHub then says `state: closed`, `merged: true`. */
  merged_at: string | null;
}

/** A check run as the stand-in keeps it: one per (commit, name), in a suite per (commit, app). */
export interface StandInCheckRun {
  id: number;
  suiteId: number;
  headSha: string;
  headBranch: string;
  name: string;
  /** The GitHub App that made it: `github-actions` for Actions jobs (the check run id is the job id). */
  app: string;
  status: 'queued' | 'in_progress' | 'completed';
  conclusion: 'success' | 'failure' | 'neutral' | 'cancelled' | 'skipped' | 'timed_out' | 'action_required' | null;
  output: { title: string | null; summary: string | null; text: string | null };
  /** The job's log, served by the Actions job-logs endpoint (only for `github-actions` runs). */
  log?: string;
  startedAt: string;
  completedAt: string | null;
}

/** A commit status (the Statuses API: CI services that do not use checks). */
export interface StandInStatus {
  id: number;
  sha: string;
  context: string;
  state: 'error' | 'failure' | 'pending' | 'success';
  description: string | null;
  targetUrl: string | null;
  createdAt: string;
}
export type StandInEvent = EventFacts;
type StandInReviewComment = ReviewCommentFacts;

/** How a repository behaves where GitHub's plans and settings differ. */
export interface RepoOptions {
  /** Shown as `private` in the repository object. */
  private?: boolean;
  /**
   * False as on a private repository of the Free plan, where GitHub refuses draft pull
   * requests (422 on create, a GraphQL error on convert). Default true.
   */
  draftPullRequests?: boolean;
}

export interface RepoState {
  fullName: string;
  bareDir: string;
  createdAt: string;
  options: Required<RepoOptions>;
  next: number;
  issues: Map<number, StandInIssue>;
  pulls: Map<number, StandInPull>;
  comments: Map<number, StandInComment>;
  permissions: Map<string, Permission>;
  creations: Map<string, number>;
  events: StandInEvent[];
  reviewComments: StandInReviewComment[];
  checkRuns: StandInCheckRun[];
  statuses: StandInStatus[];
}

/** A canned answer for the next matching requests (`times`, default 1). */
export interface FaultRule {
  method: string;
  path: RegExp;
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  times?: number;
}

/** One answer of the REST API, kept so a test can check it against GitHub's description. */
export interface Exchange {
  method: string;
  /** The operation's path template in GitHub's OpenAPI description, e.g. `/repos/{owner}/{repo}/issues`. */
  route: string;
  path: string;
  status: number;
  body: unknown;
}
