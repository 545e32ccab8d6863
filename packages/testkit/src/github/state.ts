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
export type StandInEvent = EventFacts;
export type StandInReviewComment = ReviewCommentFacts;

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
}

/** A canned answer for the next matching requests (`times`, default 1). */
export interface FaultRule { method: string; path: RegExp; status: number; headers?: Record<string, string>; body?: unknown; times?: number }

/** One answer of the REST API, kept so a test can check it against GitHub's description. */
export interface Exchange {
  method: string;
  /** The operation's path template in GitHub's OpenAPI description, e.g. `/repos/{owner}/{repo}/issues`. */
  route: string;
  path: string;
  status: number;
  body: unknown;
}
