import { randomUUID } from 'node:crypto';
import { createJob, defaultIdempotencyKey, type Job } from '@codefleet/core';
import type { Requester } from '@codefleet/requester';
import type { Logger } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import type { CancelRequests, Journal, RunStore } from '@codefleet/store';
import type { GithubChecks } from '../api/github-checks.js';
import type { GithubIssues, GithubPermission } from '../api/github-issues.js';

/** A request to turn an issue into a job: who labeled what. */
export interface TriggerRequest {
  /** `owner/name`. */
  repo: string;
  issueNumber: number;
  /** The login that added the label: the one whose permission counts. */
  actor: string;
  /** Where the event came from, for logs (`webhook <delivery id>`, `poll`). */
  via: string;
  /**
   * The id of the job this request makes, derived from what GitHub sent (the delivery, the
   * label event, the comment, the review): acting on the same thing twice, even after its
   * job finished, finds that job instead of making another.
   */
  jobId?: string;
  /** A label that must still be on the issue (the trigger label of a `labeled` event). */
  requireLabel?: string;
}

/** What the producer needs. */
export interface TriggerDeps {
  issues: Pick<
    GithubIssues,
    'getTask' | 'permission' | 'ensureComment' | 'listComments' | 'ensureLabels' | 'reviewComments'
  >;
  queue: Queue;
  log: Logger;
  /** Where a queued job is reported (the issue: its queued label). */
  requester: Requester;
  /** Where `/codefleet cancel` is recorded for the workers to see (the run store). */
  /** Where cancels are recorded, and written to the journal (who, via the issue) when it has one. */
  cancels?: CancelRequests & Partial<Journal>;
  /** The run store's records: a job id with a run has been worked on, so it is not queued again. */
  runs?: Pick<RunStore, 'get'>;
  /** GitHub's checks and job logs, for CI feedback; without them check events are ignored. */
  checks?: Pick<GithubChecks, 'pull' | 'openPullFor' | 'commitChecks' | 'jobLog'>;
  /** `forge.github.ci_feedback`; CI feedback is off without it. */
  ciFeedback?: CiFeedbackSettings;
  now?: () => Date;
}

/** `forge.github.ci_feedback`: whether failing CI is fed back, how often per pull request, how much log. */
export interface CiFeedbackSettings {
  enabled: boolean;
  /** Follow-up jobs per pull request; the next failure is refused (and said so on the PR). */
  maxRounds: number;
  /** Bytes of each failing job's log given to the agent. */
  logBytes: number;
  /**
   * How long a round waits for the commit's other checks to finish, counted from its first
   * failure; past it the round starts with what has failed so far. Default {@link defaultCiSettleMs}.
   */
  settleMs?: number;
}

/** Thirty minutes: longer than most CI runs take, short enough that a stuck check does not stall the loop. */
export const defaultCiSettleMs = 30 * 60_000;

/** What became of a trigger. */
export type TriggerOutcome =
  | { status: 'enqueued'; jobId: string }
  | { status: 'duplicate'; jobId: string }
  /** A review while its issue's job is queued or running: kept, and queued once that job ends. */
  | { status: 'deferred'; jobId: string; reason: string }
  | { status: 'refused'; reason: string }
  | { status: 'ignored'; reason: string }
  | { status: 'cancel_requested'; taskKey: string }
  /** CI passed after CI feedback rounds: the loop of that pull request is over (said on it). */
  | { status: 'ended'; reason: string }
  /** Could not be turned into a job for good (the issue was told why, where it could be). */
  | { status: 'failed'; reason: string };

/** Roles that may start work on a repository. */
const mayTrigger: readonly GithubPermission[] = ['admin', 'maintain', 'write'];

/**
 * Turns a labeled issue into one job: the issue is read from the API at this moment (the
 * job keeps that snapshot, so later edits cannot inject instructions; a trigger label
 * removed meanwhile means nothing is started), the actor's permission is checked through
 * the API (write, maintain or admin; a `[bot]` suffix or an author-association string
 * proves nothing), and the job is enqueued under the issue's idempotency key, so a
 * redelivered webhook or a second label gives the same job; with `jobId`, a request
 * whose job already ran is a duplicate too. Adding the queued label is best effort: the
 * job is queued, which is what counts.
 */
export async function triggerFromIssue(deps: TriggerDeps, req: TriggerRequest): Promise<TriggerOutcome> {
  const log = deps.log.child({ repo: req.repo, issue: req.issueNumber, actor: req.actor, via: req.via });
  const target = { kind: 'issue' as const, number: req.issueNumber };
  const ran = await alreadyRan(deps, req.jobId);
  if (ran) return ran;
  const task = await deps.issues.getTask(req.repo, req.issueNumber);
  if (req.requireLabel !== undefined && !task.labels.some((l) => l.toLowerCase() === req.requireLabel?.toLowerCase())) {
    log.info({ event: 'trigger.label_gone' }, 'the trigger label was removed before codefleet acted');
    return { status: 'ignored', reason: `the label ${req.requireLabel} is no longer on the issue` };
  }
  if (!(await permitted(deps, req))) {
    log.info({ event: 'trigger.refused' }, 'actor may not trigger codefleet');
    await bestEffort(log, 'trigger.comment_failed', () =>
      deps.issues.ensureComment({
        repo: req.repo,
        target,
        marker: 'permission',
        body: `Thanks for the label, @${req.actor}! codefleet only starts work for collaborators with write access to this repository, so nothing was queued. A maintainer can add the label to start it.`,
      }),
    );
    return { status: 'refused', reason: `@${req.actor} needs write access or above` };
  }
  // A new trigger overrides an earlier cancel of the same task.
  await deps.cancels?.clearCancel(taskKeyOf(req.repo, req.issueNumber));
  if (task.isPullRequest) return { status: 'ignored', reason: 'labels on pull requests do not start jobs' };
  if (task.state === 'closed') return { status: 'ignored', reason: 'the issue is closed' };
  const job: Job = createJob(
    {
      ...(req.jobId === undefined ? {} : { id: req.jobId }),
      repo: req.repo,
      source: { kind: 'issue', number: req.issueNumber },
      title: task.title,
      body: task.body,
      requested_by: req.actor,
    },
    { id: randomUUID(), now: (deps.now ?? (() => new Date()))() },
  );
  const result = await deps.queue.enqueue(job);
  if (result.deduplicated) {
    log.info({ event: 'trigger.duplicate', job_id: result.id }, 'already queued or running');
    return { status: 'duplicate', jobId: result.id };
  }
  log.info({ event: 'trigger.enqueued', job_id: job.id }, 'issue queued');
  await bestEffort(log, 'trigger.label_failed', () => deps.requester.report({ kind: 'queued', job }));
  return { status: 'enqueued', jobId: job.id };
}

/** A duplicate outcome when the job `jobId` has a run already (worked on, maybe finished). */
export async function alreadyRan(deps: TriggerDeps, jobId: string | undefined): Promise<TriggerOutcome | undefined> {
  if (jobId === undefined || !deps.runs) return undefined;
  return (await deps.runs.get(jobId)) === undefined ? undefined : { status: 'duplicate', jobId };
}

/** Runs a write whose failure must not undo what already happened (a job is queued); logs it. */
export async function bestEffort(log: Logger, event: string, write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (error) {
    log.warn({ err: error, event }, 'a best-effort GitHub write failed');
  }
}

/** The task key of an issue: the one the job, its lease and its cancel request share. */
export function taskKeyOf(repo: string, issueNumber: number): string {
  return defaultIdempotencyKey(repo, { kind: 'issue', number: issueNumber }, '');
}

async function permitted(deps: TriggerDeps, req: TriggerRequest): Promise<boolean> {
  return mayTrigger.includes(await deps.issues.permission(req.repo, req.actor));
}

/**
 * `/codefleet cancel` on an issue: recorded in the store for the workers (a queued job
 * ends cancelled when claimed, a running one at the next heartbeat); only collaborators
 * with write access may cancel, as only they may start.
 */
export async function cancelFromIssue(deps: TriggerDeps, req: TriggerRequest): Promise<TriggerOutcome> {
  if (!deps.cancels) return { status: 'ignored', reason: 'no run store to record the cancel in' };
  if (!(await permitted(deps, req)))
    return { status: 'refused', reason: `@${req.actor} needs write access or above to cancel` };
  const taskKey = taskKeyOf(req.repo, req.issueNumber);
  await deps.cancels.requestCancel(taskKey, req.actor);
  await deps.cancels
    .record?.({ kind: 'action', action: 'cancel', taskKey, by: req.actor, via: 'issue', at: new Date().toISOString() })
    .catch((err: unknown) =>
      deps.log.warn({ err, event: 'journal.record_failed' }, 'could not write the cancel to the journal'),
    );
  deps.log.info(
    { event: 'trigger.cancel_requested', repo: req.repo, issue: req.issueNumber, actor: req.actor },
    'cancel requested',
  );
  return { status: 'cancel_requested', taskKey };
}

/** A review on a codefleet pull request: what the follow-up job gets as feedback. */
export interface ReviewRequest extends TriggerRequest {
  pullNumber: number;
  /** The PR's head branch; only `ai/issue-<n>` branches are codefleet's and followed up. */
  headRef: string;
  /** The head repository (`owner/name`): a fork's PR is never followed up. */
  headRepo: string;
  reviewBody: string;
  reviewState: string;
  /** The review's id: its inline comments are fetched and become feedback too. */
  reviewId?: number;
  /** True when this review was deferred before: the pull request is told it is queued now. */
  deferred?: boolean;
}

/**
 * A review that asks for changes (or comments with text) on a codefleet pull request
 * becomes a follow-up job on the same branch: the issue's task, with the review as
 * feedback. Same issue, same branch (`ai/issue-<n>`), so the worker commits on top of
 * what it pushed and updates the one pull request. While another job of the issue is
 * queued or running the review is `deferred` (the caller keeps it and asks again later)
 * and the pull request says so, so its text is never dropped.
 */
export async function followUpFromReview(deps: TriggerDeps, req: ReviewRequest): Promise<TriggerOutcome> {
  const issueNumber = /^ai\/issue-(\d+)$/.exec(req.headRef)?.[1];
  if (issueNumber === undefined) return { status: 'ignored', reason: `${req.headRef} is not a codefleet issue branch` };
  if (req.headRepo.toLowerCase() !== req.repo.toLowerCase())
    return { status: 'ignored', reason: 'pull requests from forks are not followed up' };
  if (req.reviewState === 'approved') return { status: 'ignored', reason: 'an approval asks for nothing' };
  const ran = await alreadyRan(deps, req.jobId);
  if (ran) return ran;
  if (!(await permitted(deps, req))) return { status: 'refused', reason: `@${req.actor} needs write access or above` };
  // Inline comments are where reviewers usually say what to change.
  const inline =
    req.reviewId === undefined ? [] : await deps.issues.reviewComments(req.repo, req.pullNumber, req.reviewId);
  const feedback = [
    req.reviewBody.trim(),
    ...inline.map((c) => `- \`${c.path}${c.line === undefined ? '' : `:${c.line}`}\`: ${c.body}`),
  ].filter((l) => l !== '');
  if (feedback.length === 0) return { status: 'ignored', reason: 'nothing to address in this review' };
  const task = await deps.issues.getTask(req.repo, Number(issueNumber));
  const job = createJob(
    {
      ...(req.jobId === undefined ? {} : { id: req.jobId }),
      repo: req.repo,
      source: { kind: 'issue', number: Number(issueNumber), via: 'review' },
      title: task.title,
      body: [
        task.body,
        '',
        `## Review feedback on pull request #${req.pullNumber} (from @${req.actor})`,
        '',
        ...feedback,
      ]
        .join('\n')
        .slice(0, 65_536),
      requested_by: req.actor,
    },
    { id: randomUUID(), now: (deps.now ?? (() => new Date()))() },
  );
  const log = deps.log.child({ repo: req.repo, pull: req.pullNumber, actor: req.actor, via: req.via });
  const target = { kind: 'pull' as const, number: req.pullNumber };
  const marker = `follow-up:${req.reviewId ?? job.id}`;
  const result = await deps.queue.enqueue(job);
  if (result.deduplicated && result.id !== job.id) {
    log.info({ event: 'trigger.follow_up_deferred', job_id: result.id }, 'review kept until the running job ends');
    await bestEffort(log, 'trigger.comment_failed', () =>
      deps.issues.ensureComment({
        repo: req.repo,
        target,
        marker,
        body: `Thanks @${req.actor}: codefleet is still working on #${issueNumber}, so this review is kept and becomes a follow-up job as soon as that job ends.`,
      }),
    );
    return {
      status: 'deferred',
      jobId: result.id,
      reason: `job ${result.id} of issue #${issueNumber} is queued or running`,
    };
  }
  if (result.deduplicated) return { status: 'duplicate', jobId: result.id };
  // Cleared only once queued: clearing first would undo a cancel of the job still running
  // while this review waits (and a waiting review asks again and again).
  await deps.cancels?.clearCancel(taskKeyOf(req.repo, Number(issueNumber)));
  log.info({ event: 'trigger.follow_up', job_id: job.id }, 'review follow-up queued');
  if (req.deferred === true) {
    // Only where the wait was announced: a review that merely failed once gets no comment.
    await bestEffort(log, 'trigger.comment_failed', async () => {
      if (!(await deps.issues.listComments(req.repo, target)).some((c) => c.marker === marker)) return;
      await deps.issues.ensureComment({
        repo: req.repo,
        target,
        marker,
        body: `Thanks @${req.actor}: this review is queued as a follow-up job now.`,
      });
    });
  }
  return { status: 'enqueued', jobId: job.id };
}
