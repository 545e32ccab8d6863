import { randomUUID } from 'node:crypto';
import { createJob, type Job } from '@codefleet/core';
import type { GithubForge, GithubPermission } from '@codefleet/forge';
import type { Logger } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';

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
  forge: Pick<GithubForge, 'getTask' | 'permission' | 'ensureComment' | 'ensureLabels'>;
  queue: Queue;
  log: Logger;
  labels: { queued: string };
  now?: () => Date;
}

/** What became of a trigger. */
export type TriggerOutcome =
  | { status: 'enqueued'; jobId: string }
  | { status: 'duplicate'; jobId: string }
  | { status: 'refused'; reason: string }
  | { status: 'ignored'; reason: string };

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
  const permission = await deps.forge.permission(req.repo, req.actor);
  if (!mayTrigger.includes(permission)) {
    log.info({ event: 'trigger.refused', permission }, 'actor may not trigger codefleet');
    await deps.forge.ensureComment({
      repo: req.repo, target, marker: 'permission',
      body: `Thanks for the label, @${req.actor}! codefleet only starts work for collaborators with write access to this repository, so nothing was queued. A maintainer can add the label to start it.`,
    });
    return { status: 'refused', reason: `@${req.actor} has ${permission} access; write or above is needed` };
  }
  const task = await deps.forge.getTask(req.repo, req.issueNumber);
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
