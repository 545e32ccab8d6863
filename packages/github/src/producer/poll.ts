import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { classify } from '@codefleet/core';
import { escapeInline } from '@codefleet/forge';
import type { GithubChecks } from '../api/github-checks.js';
import type { GithubIssues } from '../api/github-issues.js';
import { followUpFromCi } from './ci-feedback.js';
import { cancelFromIssue, triggerFromIssue, type TriggerDeps, type TriggerOutcome } from './trigger.js';

/** What the poller reads GitHub through: its issues (one client, one error mapping). */
export type PollDeps = TriggerDeps & {
  issues: TriggerDeps['issues'] & Pick<GithubIssues, 'labeledIssues' | 'labelEvents' | 'commentsSince'>;
  /** With CI feedback on: the open pull requests too. */
  checks?: NonNullable<TriggerDeps['checks']> & Pick<GithubChecks, 'openPulls'>;
};

/** Settings of {@link createPoller}. */
export interface PollOptions {
  repos: readonly string[];
  triggerLabel: string;
  /** JSON file keeping the cursor: which label events were handled, per repository. */
  cursorPath: string;
}

/** What the poller remembers between runs (and restarts). */
interface Cursor {
  repos: Record<string, { handled: number[]; comments?: { since?: string; handled: number[] } }>;
}

/** How many handled event ids a repository keeps: far more than one poll ever sees. */
const keepHandled = 2_000;

/**
 * Polling mode, for hosts GitHub cannot reach (a Mac mini at home): every poll lists the
 * open issues carrying the trigger label, finds who added the label (the issue's
 * `labeled` events), and triggers each label event once; then the comments updated since
 * the last poll, for `/codefleet retry` and `/codefleet cancel`. The ids of handled events are
 * persisted (written to a temp file, then renamed) before the poll returns, so a restart
 * never handles an event twice; and if it crashed in between, the job id derived from the
 * event still makes the second trigger a duplicate.
 *
 * Each repository, issue and comment is handled on its own: a transient failure (GitHub
 * 5xx, a rate limit) leaves that one unhandled for the next poll and goes on with the
 * rest; one that cannot become a job for good is marked handled, reported as `failed`,
 * and the issue gets a comment saying why.
 */
export function createPoller(deps: PollDeps, options: PollOptions): { pollOnce(): Promise<TriggerOutcome[]> } {
  return {
    async pollOnce() {
      const cursor = loadCursor(options.cursorPath);
      const outcomes: TriggerOutcome[] = [];
      let failures = 0;
      for (const repo of options.repos) {
        try {
          await pollRepo(deps, options, repo, cursor, outcomes);
          await pollChecks(deps, repo, outcomes);
        } catch (error) {
          failures += 1;
          skipped(deps, repo, error);
          // Every repository failing is an outage worth an error to the caller, not a quiet poll.
          if (failures === options.repos.length) throw error;
        }
      }
      saveCursor(options.cursorPath, cursor);
      return outcomes;
    },
  };
}

function loadCursor(path: string): Cursor {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Cursor;
  } catch {
    return { repos: {} };
  }
}

function saveCursor(path: string, cursor: Cursor): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify(cursor));
  renameSync(temp, path);
}

/**
 * Runs one trigger. A transient failure throws (the caller leaves the item for the next
 * poll); a permanent one becomes `failed`, told on the issue.
 */
async function attempt(
  deps: PollDeps,
  repo: string,
  issueNumber: number,
  run: () => Promise<TriggerOutcome>,
): Promise<TriggerOutcome> {
  try {
    return await run();
  } catch (error) {
    const c = classify(error);
    if (c.verdict === 'transient') throw error;
    const log = deps.log.child({ repo, issue: issueNumber });
    log.warn(
      { err: error, event: 'poll.trigger_failed', code: c.code },
      'issue cannot become a job; told on the issue',
    );
    const reason = `${c.code}: ${c.message}`;
    await deps.issues
      .ensureComment({
        repo,
        target: { kind: 'issue', number: issueNumber },
        marker: 'cannot-start',
        body: `⚠️ codefleet could not start work on this issue: ${escapeInline(reason, 1_000)}`,
      })
      .catch((err: unknown) => log.warn({ err, event: 'poll.comment_failed' }, 'could not comment the reason'));
    return { status: 'failed', reason };
  }
}

function skipped(deps: PollDeps, what: string, error: unknown): void {
  deps.log.warn({ err: error, event: 'poll.skipped', what }, `${what} failed; trying again at the next poll`);
}

type RepoCursor = Cursor['repos'][string];

/** One repository's issues: its new trigger-label events, then its new `/codefleet` comments. */
async function pollRepo(
  deps: PollDeps,
  options: PollOptions,
  repo: string,
  cursor: Cursor,
  outcomes: TriggerOutcome[],
): Promise<void> {
  const state = (cursor.repos[repo.toLowerCase()] ??= { handled: [] });
  const save = () => saveCursor(options.cursorPath, cursor);
  await pollLabelEvents(deps, repo, options.triggerLabel, state, save, outcomes);
  await pollComments(deps, repo, state, save, outcomes);
}

/** Triggers each label event of the open labelled issues once; the cursor is saved after each. */
async function pollLabelEvents(
  deps: PollDeps,
  repo: string,
  triggerLabel: string,
  state: RepoCursor,
  save: () => void,
  outcomes: TriggerOutcome[],
): Promise<void> {
  const handled = new Set(state.handled);
  for (const issueNumber of await deps.issues.labeledIssues(repo, triggerLabel)) {
    try {
      for (const event of await deps.issues.labelEvents(repo, issueNumber, triggerLabel)) {
        if (handled.has(event.id)) continue;
        const request = {
          repo,
          issueNumber,
          actor: event.actor,
          via: `poll event ${event.id}`,
          jobId: `gh-event-${event.id}`,
        };
        outcomes.push(await attempt(deps, repo, issueNumber, () => triggerFromIssue(deps, request)));
        handled.add(event.id);
        state.handled = [...handled].slice(-keepHandled);
        save();
      }
    } catch (error) {
      skipped(deps, `${repo}#${issueNumber}`, error);
    }
  }
}

/** Acts on `/codefleet retry` and `/codefleet cancel` in the comments updated since the last poll, in order. */
async function pollComments(
  deps: PollDeps,
  repo: string,
  state: RepoCursor,
  save: () => void,
  outcomes: TriggerOutcome[],
): Promise<void> {
  // The first poll of a repository starts from now: old comments are history, not commands.
  const comments = (state.comments ??= { since: new Date().toISOString(), handled: [] });
  const seen = new Set(comments.handled);
  for (const comment of await deps.issues.commentsSince(repo, comments.since)) {
    if (seen.has(comment.id)) continue;
    const command = /^\s*\/codefleet\s+(retry|cancel)\b/i.exec(comment.body)?.[1]?.toLowerCase();
    if (command !== undefined && Number.isInteger(comment.issueNumber) && comment.author !== '') {
      const request = {
        repo,
        issueNumber: comment.issueNumber,
        actor: comment.author,
        via: `poll comment ${comment.id}`,
        jobId: `gh-comment-${comment.id}`,
      };
      try {
        outcomes.push(
          await attempt(deps, repo, comment.issueNumber, () =>
            command === 'cancel' ? cancelFromIssue(deps, request) : triggerFromIssue(deps, request),
          ),
        );
      } catch (error) {
        // Comments are read in order: stop here so this one is read again next time.
        skipped(deps, `${repo} comment ${comment.id}`, error);
        break;
      }
    }
    seen.add(comment.id);
    comments.handled = [...seen].slice(-keepHandled);
    if (comment.updatedAt > (comments.since ?? '')) comments.since = comment.updatedAt;
    save();
  }
}

/**
 * CI feedback without webhooks: the open pull requests of the repository's own `ai/`
 * branches whose head has finished checks. Each commit is acted on once however often it
 * is polled (the follow-up's job id and its comment are per commit); a job still running
 * leaves it for a later poll.
 */
async function pollChecks(deps: PollDeps, repo: string, outcomes: TriggerOutcome[]): Promise<void> {
  const checks = deps.checks;
  if (!checks || deps.ciFeedback?.enabled !== true) return;
  for (const pull of await checks.openPulls(repo)) {
    if (!pull.headRef.startsWith('ai/') || pull.headRepo.toLowerCase() !== repo.toLowerCase()) continue;
    try {
      const state = await checks.commitChecks(repo, pull.headSha);
      const outcome =
        state.failed.length > 0 ? 'failed' : state.pending === 0 && state.passed > 0 ? 'passed' : undefined;
      if (outcome === undefined) continue;
      const done = await followUpFromCi(deps, {
        repo,
        sha: pull.headSha,
        branch: pull.headRef,
        pullNumbers: [pull.number],
        outcome,
        via: 'poll',
      });
      // Polling says "nothing new" every time: only what changed is an outcome.
      if (done.status !== 'ignored' && done.status !== 'duplicate') outcomes.push(done);
    } catch (error) {
      const c = classify(error);
      if (c.verdict === 'transient') skipped(deps, `${repo} pull request #${pull.number} checks`, error);
      else
        deps.log.warn(
          { err: error, event: 'poll.ci_failed', repo, pull: pull.number, code: c.code },
          'CI feedback failed for this pull request',
        );
    }
  }
}
