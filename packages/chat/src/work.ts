import {
  createJob,
  isTerminal,
  maxBodyChars,
  type Job,
  type JobRoute,
  type JobSource,
  type RunRecord,
} from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import { reportSafely, type Requester } from '@codefleet/requester';
import { latestRun, type RunStore } from '@codefleet/store';
import { isCodeRoute } from './commands.js';
import { readJobMeta, type JobMeta } from './job-meta.js';
import { jobMetaKey, messageKey, threadKey } from './request-keys.js';
import type { ChatMessage, ChatOutcome } from './port.js';

const day = 24 * 60 * 60 * 1000;
/** How long a message stays bound to its job: longer than any platform retries a delivery. */
export const messageKeyTtlMs = 7 * day;
/** How long a thread remembers its job for follow-ups (and OPS the job's requester). */
export const threadKeyTtlMs = 30 * day;

/** What making a job needs. */
export interface WorkDeps {
  queue: Queue;
  store: RunStore;
  requester: Requester;
  log: Logger;
  now: () => Date;
  id: () => string;
}

/** The job a message asks for, decided before it is made. */
export interface WorkOrder {
  message: ChatMessage;
  route: JobRoute;
  repo: string;
  /** The task as the user wrote it, command and `repo=` taken off. */
  task: string;
  agent: string;
  mode: Job['mode'];
}

/** The thread's earlier CODE job: its id, repository and latest run (none while it waits for a worker). */
export interface ThreadJob {
  jobId: string;
  repo?: string;
  run?: RunRecord;
}

/** The job the message's thread made last, if any (kept {@link threadKeyTtlMs}). */
export async function threadJobOf(message: ChatMessage, store: RunStore): Promise<ThreadJob | undefined> {
  const jobId = await store.lookupRequest(threadKey(message));
  if (jobId === undefined || jobId === '') return undefined;
  const { run } = await latestRun(store, jobId);
  if (run !== undefined) return { jobId, repo: run.job.repo, run };
  const meta = await readJobMeta(store, jobId);
  return { jobId, ...(meta === undefined ? {} : { repo: meta.repo }) };
}

/** The thread's earlier job, when a CODE message may continue its branch or must wait for it. */
export type FollowUp =
  { status: 'none' } | { status: 'busy'; jobId: string } | { status: 'continue'; jobId: string; branch: string };

/**
 * What the thread's earlier CODE job means for a new one on `repo`: still queued or running
 * (the new message must wait: two jobs on one branch would race), finished with a branch on
 * the same repository (the new job continues it), or nothing to continue.
 */
export function followUpOf(thread: ThreadJob | undefined, repo: string): FollowUp {
  if (thread === undefined) return { status: 'none' };
  const { run } = thread;
  // Another repository named in the same thread is a new piece of work, not a follow-up.
  if (thread.repo !== undefined && thread.repo !== repo) return { status: 'none' };
  // No run yet: the job is still waiting for a worker.
  if (run === undefined || !isTerminal(run.stage)) return { status: 'busy', jobId: thread.jobId };
  if (run.branch === undefined || !run.branch.startsWith('ai/')) return { status: 'none' };
  return { status: 'continue', jobId: thread.jobId, branch: run.branch };
}

/** The job's source: the chat thread, or the CLI for `codefleet chat` (reported by the CLI requester). */
function sourceOf(message: ChatMessage): JobSource {
  if (message.platform === 'cli') return { kind: 'cli' };
  return {
    kind: 'chat',
    platform: message.platform,
    channel: message.channel,
    thread_id: message.thread,
    message_id: message.messageId,
    ...(message.statusMessageId === undefined ? {} : { status_message_id: message.statusMessageId }),
  };
}

/** The first non-empty line of the task, as a job title. */
export function titleOf(task: string): string {
  const line =
    task
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l !== '') ?? '';
  return line.slice(0, 256).trim();
}

/**
 * Makes and enqueues the job of `order`, once per message: the message key is bound to the new
 * job id before the enqueue, so a retried delivery (even one racing this call in another
 * process) finds the first job and enqueues nothing. A CODE job then becomes the thread's job
 * (the one a follow-up continues); the requester is told it is queued.
 */
export async function enqueueWork(order: WorkOrder, followUp: FollowUp, deps: WorkDeps): Promise<ChatOutcome> {
  const { message, route, repo } = order;
  const continued = followUp.status === 'continue' && order.mode === 'change' ? followUp : undefined;
  const preface =
    continued === undefined
      ? []
      : [
          `Follow-up in the same chat thread to job ${continued.jobId}: continue on branch ${continued.branch}, on top of what is there.`,
          '',
        ];
  let job: Job;
  try {
    job = createJob(
      {
        repo,
        source: sourceOf(message),
        title: titleOf(order.task),
        body: [...preface, message.text].join('\n').slice(0, maxBodyChars),
        mode: order.mode,
        route,
        agent: order.agent,
        requested_by: (message.access.login ?? message.user).slice(0, 256),
        ...(continued === undefined ? {} : { branch: continued.branch }),
      },
      { id: deps.id(), now: deps.now() },
    );
  } catch (error) {
    // A message the job format cannot hold (an over-long channel id): said, not thrown at the producer.
    if ((error as { code?: unknown }).code !== 'invalid_job') throw error;
    return { kind: 'reply', text: `I couldn't make a job of that message: ${(error as Error).message}`, route };
  }
  const key = messageKey(message);
  let bound = await deps.store.bindRequest(key, job.id, messageKeyTtlMs);
  // '' is how earlier versions freed the key of a delivery whose enqueue failed (a key written
  // so may still be live): this one takes it over. Two doing so at once still make one job:
  // the queue dedups the message's idempotency key.
  if (!bound.bound && bound.value === '') {
    await deps.store.setRequest(key, job.id, messageKeyTtlMs);
    bound = { value: job.id, bound: true };
  }
  if (!bound.bound) return { kind: 'enqueued', jobId: bound.value, route, deduplicated: true, repo };
  let result;
  try {
    result = await deps.queue.enqueue(job);
  } catch (error) {
    // Freed, so a redelivery tries again rather than being told about a job never queued.
    await deps.store.releaseRequest(key).catch(() => undefined);
    throw error;
  }
  if (result.deduplicated) await deps.store.setRequest(key, result.id, messageKeyTtlMs);
  const meta: JobMeta = {
    id: result.id,
    repo: job.repo,
    requested_by: job.requested_by,
    source: job.source,
    idempotency_key: job.idempotency_key,
    route,
  };
  await deps.store.setRequest(jobMetaKey(result.id), JSON.stringify(meta), threadKeyTtlMs);
  if (isCodeRoute(route.name)) await deps.store.setRequest(threadKey(message), result.id, threadKeyTtlMs);
  deps.log.info(
    {
      event: 'chat.enqueued',
      job_id: result.id,
      route: route.name,
      repo,
      mode: job.mode,
      follow_up: continued?.jobId,
      deduplicated: result.deduplicated,
    },
    result.deduplicated ? 'the same request is already queued' : `queued a ${job.mode} job`,
  );
  if (!result.deduplicated) await reportSafely(deps.requester, { kind: 'queued', job }, deps.log);
  return { kind: 'enqueued', jobId: result.id, route, deduplicated: result.deduplicated, repo };
}
