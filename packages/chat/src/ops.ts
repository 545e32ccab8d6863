import { isTerminal, type RunRecord } from '@codefleet/core';
import type { Queue } from '@codefleet/queue';
import { latestRun, type JournalEntry, type RunStore } from '@codefleet/store';
import { checkManage, type PermissionCheck } from './access.js';
import { readJobMeta, type JobMeta } from './job-meta.js';
import type { ChatMessage } from './port.js';

/** Run records `status` looks through for the sender's jobs, and how many it lists. */
const statusScan = 200;
const statusShown = 10;

/** What the OPS route needs. */
export interface OpsDeps {
  queue: Queue;
  store: RunStore;
  permission?: PermissionCheck;
}

const jobIdShape = /^[A-Za-z0-9._:-]{1,128}$/;

export const opsHelp = [
  'Fleet operations (answered without a model):',
  '/ops status: your recent jobs',
  '/ops queue: queue depth, jobs in flight, dead letters',
  '/ops cancel <job id>: stop a queued or running job',
  '/ops retry <job id>: put a dead-lettered job back on the queue',
].join('\n');

/**
 * The OPS route: the fleet's own operations, answered from the queue and the run store
 * without a model. `status` and `queue` are open to everyone who may talk to the bot;
 * `cancel` and `retry` only to the job's requester or someone who may start work on its
 * repository. Returns the plain-text reply.
 */
export async function operate(text: string, message: ChatMessage, deps: OpsDeps): Promise<string> {
  const [verb = '', argument, ...extra] = text.trim().split(/\s+/);
  switch (verb.toLowerCase()) {
    case 'status':
      return status(message, deps);
    case 'queue': {
      const stats = await deps.queue.stats();
      return `Queue: ${stats.depth} waiting (${stats.ready} ready, ${stats.delayed} delayed), ${stats.inFlight} in flight, ${stats.deadLetter} dead-lettered.`;
    }
    case 'cancel':
    case 'retry':
      if (argument === undefined || extra.length > 0 || !jobIdShape.test(argument))
        return `Usage: /ops ${verb.toLowerCase()} <job id>`;
      return verb.toLowerCase() === 'cancel' ? cancel(argument, message, deps) : retry(argument, message, deps);
    default:
      return opsHelp;
  }
}

async function status(message: ChatMessage, deps: OpsDeps): Promise<string> {
  const me = new Set([message.user, ...(message.access.login === undefined ? [] : [message.access.login])]);
  const mine = (await deps.store.list({ limit: statusScan }))
    .filter((run) => run.requestedBy !== undefined && me.has(run.requestedBy))
    .slice(0, statusShown);
  if (mine.length === 0)
    return 'You have no recent jobs with a run yet (a job shows here once a worker picks it up; /ops queue shows what is waiting).';
  // Titles are the users' own text: not quoted back, the id and repository say which job.
  const lines = mine.map((run) => {
    const state = run.outcome === undefined ? run.stage : `${run.stage}, ${run.outcome}`;
    const pr = run.pullRequest?.url === undefined ? '' : ` ${run.pullRequest.url}`;
    return `${run.runId}  ${run.repo}  ${state}${pr}`;
  });
  return [`Your recent jobs (newest first):`, ...lines].join('\n');
}

/** The job `id` names: its latest run's, a chat job's recorded meta, or a dead letter's. */
async function findJob(id: string, deps: OpsDeps): Promise<{ job: JobMeta; run?: RunRecord } | undefined> {
  const { run } = await latestRun(deps.store, id);
  if (run !== undefined) return { job: run.job, run };
  const meta = await readJobMeta(deps.store, id);
  if (meta !== undefined) return { job: meta };
  const dead = (await deps.queue.deadLetters({ limit: 1_000 })).find((d) => d.id === id && d.job !== undefined);
  return dead?.job === undefined ? undefined : { job: dead.job };
}

async function cancel(id: string, message: ChatMessage, deps: OpsDeps): Promise<string> {
  const found = await findJob(id, deps);
  if (found === undefined) return `I know no job ${id}.`;
  const verdict = await checkManage(found.job, message, deps.permission);
  if (!verdict.allowed)
    return `Only the person who asked for job ${id}, or someone who may start work on ${found.job.repo}, may cancel it. ${verdict.text}`;
  if (found.run !== undefined && isTerminal(found.run.stage))
    return `Job ${id} has already ended (${found.run.outcome ?? found.run.stage}); nothing to cancel.`;
  const by = message.access.login ?? message.user;
  await deps.store.requestCancel(found.job.idempotency_key, by);
  await journal(deps, {
    action: 'cancel',
    jobId: found.job.id,
    taskKey: found.job.idempotency_key,
    by,
    ...(found.run === undefined ? {} : { runId: found.run.run_id }),
  });
  return `Cancel requested for job ${id}: a queued job ends when a worker picks it up, a running one at its next check. Nothing more will be published.`;
}

async function retry(id: string, message: ChatMessage, deps: OpsDeps): Promise<string> {
  const found = await findJob(id, deps);
  if (found === undefined) return `I know no job ${id}.`;
  const verdict = await checkManage(found.job, message, deps.permission);
  if (!verdict.allowed)
    return `Only the person who asked for job ${id}, or someone who may start work on ${found.job.repo}, may retry it. ${verdict.text}`;
  const result = await deps.queue.redrive(id);
  switch (result.status) {
    case 'redriven':
      await journal(deps, { action: 'retry', jobId: id, by: message.access.login ?? message.user });
      return `Job ${id} is back on the queue.`;
    case 'not_found':
      return `Job ${id} is not in the dead-letter queue: only a job that gave up can be retried.`;
    case 'duplicate_active':
      return `Job ${id} was not retried: job ${result.activeId} for the same request is still queued or running.`;
    case 'refused_unsigned':
      return `Job ${id} was not retried: no producer of this fleet signed it, so no worker will run it.`;
  }
}

/** Writes an operator action to the run store's journal; it already happened, so a failure only loses the record. */
async function journal(
  deps: OpsDeps,
  entry: Omit<Extract<JournalEntry, { kind: 'action' }>, 'kind' | 'via' | 'at'>,
): Promise<void> {
  await deps.store
    .record({ kind: 'action', via: 'chat', at: new Date().toISOString(), ...entry })
    .catch(() => undefined);
}
