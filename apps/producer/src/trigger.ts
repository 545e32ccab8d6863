import { randomUUID } from 'node:crypto';
import { createJob, defaultIdempotencyKey, type Job } from '@codefleet/core';
import type { GithubForge, GithubPermission } from '@codefleet/forge';
import type { Logger } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import type { CancelRequests } from '@codefleet/store';

/** A request to turn an issue into a job: who labeled what. */
export interface TriggerRequest {
  /** `owner/name`. */
  repo: string;
  issueNumber: number;
  /** The login that added the label: the one whose permission counts. */
  actor: string;
  /** Where the event came from, for logs (`webhook <delivery id>`, `poll`). */
  via: string;
}

/** What the producer needs. */
export interface TriggerDeps {
  forge: Pick<GithubForge, 'getTask' | 'permission' | 'ensureComment' | 'ensureLabels' | 'reviewComments'>;
  queue: Queue;
  log: Logger;
  labels: { queued: string };
  /** Where `/codefleet cancel` is recorded for the workers to see (the run store). */
  cancels?: CancelRequests;
  now?: () => Date;
}

/** What became of a trigger. */
export type TriggerOutcome =
  | { status: 'enqueued'; jobId: string }
  | { status: 'duplicate'; jobId: string }
  | { status: 'refused'; reason: string }
  | { status: 'ignored'; reason: string }
  | { status: 'cancel_requested'; taskKey: string };

/** Roles that may start work on a repository. */
const mayTrigger: readonly GithubPermission[] = ['admin', 'maintain', 'write'];

/**
 * Turns a labeled issue into one job: the actor's permission is checked through the API
 * (write, maintain or admin; a `[bot]` suffix or an author-association string proves
 * nothing), the issue is read from the API at this moment (the job keeps that snapshot,
 * so later edits cannot inject instructions), and the job is enqueued under the issue's
 * idempotency key, so a redelivered webhook or a second label gives the same job.
 */
export async function triggerFromIssue(deps: TriggerDeps, req: TriggerRequest): Promise<TriggerOutcome> {
  const log = deps.log.child({ repo: req.repo, issue: req.issueNumber, actor: req.actor, via: req.via });
  const target = { kind: 'issue' as const, number: req.issueNumber };
  if (!(await permitted(deps, req))) {
    log.info({ event: 'trigger.refused' }, 'actor may not trigger codefleet');
    await deps.forge.ensureComment({
      repo: req.repo, target, marker: 'permission',
      body: `Thanks for the label, @${req.actor}! codefleet only starts work for collaborators with write access to this repository, so nothing was queued. A maintainer can add the label to start it.`,
    });
    return { status: 'refused', reason: `@${req.actor} needs write access or above` };
  }
  const task = await deps.forge.getTask(req.repo, req.issueNumber);
  // A new trigger overrides an earlier cancel of the same task.
  await deps.cancels?.clearCancel(taskKeyOf(req.repo, req.issueNumber));
  if (task.isPullRequest) return { status: 'ignored', reason: 'labels on pull requests do not start jobs' };
  if (task.state === 'closed') return { status: 'ignored', reason: 'the issue is closed' };
  const job: Job = createJob({
    repo: req.repo,
    source: { kind: 'issue', number: req.issueNumber },
    title: task.title,
    body: task.body,
    requested_by: req.actor,
  }, { id: randomUUID(), now: (deps.now ?? (() => new Date()))() });
  const result = await deps.queue.enqueue(job);
  if (result.deduplicated) {
    log.info({ event: 'trigger.duplicate', job_id: result.id }, 'already queued or running');
    return { status: 'duplicate', jobId: result.id };
  }
  await deps.forge.ensureLabels({ repo: req.repo, target, add: [deps.labels.queued] });
  log.info({ event: 'trigger.enqueued', job_id: job.id }, 'issue queued');
  return { status: 'enqueued', jobId: job.id };
}

/** The task key of an issue: the one the job, its lease and its cancel request share. */
export function taskKeyOf(repo: string, issueNumber: number): string {
  return defaultIdempotencyKey(repo, { kind: 'issue', number: issueNumber }, '');
}

async function permitted(deps: TriggerDeps, req: TriggerRequest): Promise<boolean> {
  return mayTrigger.includes(await deps.forge.permission(req.repo, req.actor));
}

/**
 * `/codefleet cancel` on an issue: recorded in the store for the workers (a queued job
 * ends cancelled when claimed, a running one at the next heartbeat); only collaborators
 * with write access may cancel, as only they may start.
 */
export async function cancelFromIssue(deps: TriggerDeps, req: TriggerRequest): Promise<TriggerOutcome> {
  if (!deps.cancels) return { status: 'ignored', reason: 'no run store to record the cancel in' };
  if (!(await permitted(deps, req))) return { status: 'refused', reason: `@${req.actor} needs write access or above to cancel` };
  const taskKey = taskKeyOf(req.repo, req.issueNumber);
  await deps.cancels.requestCancel(taskKey, req.actor);
  deps.log.info({ event: 'trigger.cancel_requested', repo: req.repo, issue: req.issueNumber, actor: req.actor }, 'cancel requested');
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
}

/**
 * A review that asks for changes (or comments with text) on a codefleet pull request
 * becomes a follow-up job on the same branch: the issue's task, with the review as
 * feedback. Same issue, same branch (`ai/issue-<n>`), so the worker commits on top of
 * what it pushed and updates the one pull request; a second review while it runs is a
 * duplicate of the running job.
 */
export async function followUpFromReview(deps: TriggerDeps, req: ReviewRequest): Promise<TriggerOutcome> {
  const issueNumber = /^ai\/issue-(\d+)$/.exec(req.headRef)?.[1];
  if (issueNumber === undefined) return { status: 'ignored', reason: `${req.headRef} is not a codefleet issue branch` };
  if (req.headRepo.toLowerCase() !== req.repo.toLowerCase()) return { status: 'ignored', reason: 'pull requests from forks are not followed up' };
  if (req.reviewState === 'approved') return { status: 'ignored', reason: 'an approval asks for nothing' };
  if (!(await permitted(deps, req))) return { status: 'refused', reason: `@${req.actor} needs write access or above` };
  // Inline comments are where reviewers usually say what to change.
  const inline = req.reviewId === undefined ? [] : await deps.forge.reviewComments(req.repo, req.pullNumber, req.reviewId);
  const feedback = [req.reviewBody.trim(), ...inline.map((c) => `- \`${c.path}${c.line === undefined ? '' : `:${c.line}`}\`: ${c.body}`)].filter((l) => l !== '');
  if (feedback.length === 0) return { status: 'ignored', reason: 'nothing to address in this review' };
  const task = await deps.forge.getTask(req.repo, Number(issueNumber));
  await deps.cancels?.clearCancel(taskKeyOf(req.repo, Number(issueNumber)));
  const job = createJob({
    repo: req.repo,
    source: { kind: 'issue', number: Number(issueNumber) },
    title: task.title,
    body: [task.body, '', `## Review feedback on pull request #${req.pullNumber} (from @${req.actor})`, '', ...feedback].join('\n').slice(0, 65_536),
    requested_by: req.actor,
  }, { id: randomUUID(), now: (deps.now ?? (() => new Date()))() });
  const result = await deps.queue.enqueue(job);
  if (result.deduplicated) return { status: 'duplicate', jobId: result.id };
  deps.log.info({ event: 'trigger.follow_up', repo: req.repo, pull: req.pullNumber, job_id: job.id }, 'review follow-up queued');
  return { status: 'enqueued', jobId: job.id };
}
