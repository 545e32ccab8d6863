import { setTimeout as sleep } from 'node:timers/promises';
import { classify, decideOuter, objectIdPattern, truncateHead, type OuterPolicy } from '@codefleet/core';
import { commitsIn, mineChanges, type Change, type MineProgress, type MineRun, type Statement } from './mine.js';

/** A closed pull request as {@link PullRequestReads} lists it. */
export interface ClosedPullRequest {
  number: number;
  title: string;
  body: string;
  updatedAt: string;
  /** Absent for one closed without merging. */
  mergedAt?: string;
  /** The commit merging it made on its base branch. */
  mergeCommitSha?: string;
}

/**
 * What mining merged pull requests reads of GitHub; `createGithubPullHistory` of
 * `@codefleet/github` is it, with GitHub's request timeout and token handling. It promises
 * closed pull requests most recently updated first, a page per call (`next` from the page
 * before), and an issue by number. Failures are thrown as classified errors: a transient
 * verdict (5xx, a rate limit with the wait GitHub named, no answer) is worth another try,
 * which the miner makes; the reads never retry themselves.
 */
export interface PullRequestReads {
  closedPulls(repo: string, next?: string): Promise<{ pulls: readonly ClosedPullRequest[]; next?: string }>;
  issues: {
    getTask(repo: string, number: number): Promise<{ title: string; body: string; isPullRequest: boolean }>;
  };
}

/** What {@link mineGithubPulls} reads and how far it goes. */
export interface MineGithubOptions extends MineRun {
  /** `owner/name` on GitHub, whose merged pull requests are read (`repo` names the instances). */
  github: string;
  reads: PullRequestReads;
  /** Merged pull requests to read at most; default 5000. */
  maxPulls?: number;
  /** Before each wait for another try of a read: how long, and the failure (naming the read). */
  onWait?: (ms: number, reason: string) => void;
  /** Waits between tries; default a real timer (tests pass their own). */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * How often a GitHub read is tried: a 5xx or a lost connection passes within a few seconds'
 * backoff; a rate limit waits as long as GitHub asked (decideOuter takes the longer), so a run
 * outlives an hour's primary limit rather than failing at the top of its listing.
 */
const githubReads: Readonly<OuterPolicy> = Object.freeze({
  maxRetries: 3,
  backoff: Object.freeze({ strategy: 'exponential', baseMs: 2_000, maxMs: 60_000, jitter: true }),
});

/** Issues read per pull request at most: a body listing dozens is a release, not a fix. */
const maxLinkedIssues = 5;
/** What the suite's schema allows a statement. */
const maxStatementChars = 65_536;

/**
 * Turns a GitHub repository's merged pull requests into instances, as {@link mineChanges}
 * does commits: each one's merge commit (`merge_commit_sha`, a merge or squash on its base
 * branch) against its first parent, read from `gitDir`, which must hold those commits (a
 * clone of the repository). Named after the pull request; stated by the issues its body
 * closes (`Fixes #12`, `closes owner/name#12`, an issue URL) when there are any, else by its
 * title and body. Pull requests closed without merging, or whose merge commit the clone
 * lacks, are counted as passed over; those merged before `since` are not read.
 */
export async function mineGithubPulls(options: MineGithubOptions): Promise<MineProgress> {
  const { merged, skipped } = await mergedPulls(options);
  const present = await commitsIn(
    options,
    merged.map((pull) => pull.mergeCommitSha),
  );
  const changes: Change[] = [];
  for (const pull of merged) {
    const sha = pull.mergeCommitSha;
    if (!present.has(sha)) {
      skipped['merge commit not in the clone'] = (skipped['merge commit not in the clone'] ?? 0) + 1;
      continue;
    }
    changes.push({ sha, name: () => ({ suffix: String(pull.number), statement: () => pullStatement(options, pull) }) });
  }
  return mineChanges(options, changes, skipped);
}

type MergedPull = ClosedPullRequest & { mergedAt: string; mergeCommitSha: string };

/**
 * The merged pull requests since `since`, newest merge first, and those passed over. Pages are
 * read newest update first, so the first one updated before `since` ends the listing: one
 * merged since then was updated since then too.
 */
async function mergedPulls(
  options: MineGithubOptions,
): Promise<{ merged: MergedPull[]; skipped: Record<string, number> }> {
  const merged: MergedPull[] = [];
  const skipped: Record<string, number> = {};
  const skip = (reason: string) => {
    skipped[reason] = (skipped[reason] ?? 0) + 1;
  };
  const since = options.since?.getTime();
  const limit = options.maxPulls ?? 5000;
  let next: string | undefined;
  listing: do {
    const page = await read(options, () => options.reads.closedPulls(options.github, next));
    for (const pull of page.pulls) {
      if (since !== undefined && Date.parse(pull.updatedAt) < since) break listing;
      // The sha becomes a git argument: only an object id is one.
      if (pull.mergedAt === undefined) skip('not merged');
      else if (!objectIdPattern.test(pull.mergeCommitSha ?? '')) skip('no merge commit');
      else if (since === undefined || Date.parse(pull.mergedAt) >= since) merged.push(pull as MergedPull);
      if (merged.length >= limit) break listing;
    }
    next = page.next;
  } while (next !== undefined);
  merged.sort((a, b) => Date.parse(b.mergedAt) - Date.parse(a.mergedAt) || b.number - a.number);
  return { merged, skipped };
}

// The statement of a pull request: its linked issues' titles and bodies, else its own.
async function pullStatement(options: MineGithubOptions, pull: ClosedPullRequest): Promise<Statement> {
  const issues: string[] = [];
  for (const number of linkedIssues(pull.body, options.github)) {
    const issue = await linkedIssue(options, number);
    if (issue !== undefined) issues.push(`${issue.title}\n\n${issue.body}`.trim());
  }
  const text = issues.length > 0 ? issues.join('\n\n') : `${pull.title}\n\n${pull.body}`.trim();
  return { text: truncateHead(text, maxStatementChars), source: issues.length > 0 ? 'issue' : 'pull_request' };
}

// Issue `number`, or undefined when it is a pull request or gone (404; 410 for a deleted one).
async function linkedIssue(
  options: MineGithubOptions,
  number: number,
): Promise<{ title: string; body: string } | undefined> {
  try {
    const issue = await read(options, () => options.reads.issues.getTask(options.github, number));
    return issue.isPullRequest ? undefined : issue;
  } catch (error) {
    const { code } = classify(error);
    const status = (error as { details?: { status?: unknown } }).details?.status;
    if (code === 'forge_not_found' || status === 410) return undefined;
    throw error;
  }
}

// One GitHub read under the retry policy: the last failure is thrown.
async function read<T>(options: MineGithubOptions, call: () => Promise<T>): Promise<T> {
  for (let attemptsMade = 1; ; attemptsMade += 1) {
    try {
      return await call();
    } catch (error) {
      const failure = classify(error);
      const decision = decideOuter(githubReads, { attemptsMade, error: failure }, Math.random);
      if (decision.action === 'give_up') throw error;
      options.onWait?.(decision.delayMs, failure.message);
      await (options.sleep ?? sleep)(decision.delayMs);
    }
  }
}

// GitHub's closing keywords, before `#12`, `owner/name#12` or an issue's URL.
const closing =
  /\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+(?:#(\d+)|([\w.-]+\/[\w.-]+)#(\d+)|https?:\/\/[^\s/]+\/([\w.-]+\/[\w.-]+)\/issues\/(\d+))\b/gi;

/**
 * The issues of `repo` a pull request's body closes, in order, as GitHub links them: a closing
 * keyword (`close`, `fixes`, `resolved`, …, a colon allowed) before `#12`, `owner/name#12` or
 * the issue's URL. Another repository's issues are left out: their code is not in this history.
 */
export function linkedIssues(body: string, repo: string): number[] {
  const numbers = new Set<number>();
  for (const m of body.matchAll(closing)) {
    const named = m[2] ?? m[4];
    if (named !== undefined && named.toLowerCase() !== repo.toLowerCase()) continue;
    numbers.add(Number(m[1] ?? m[3] ?? m[5]));
  }
  return [...numbers].slice(0, maxLinkedIssues);
}
