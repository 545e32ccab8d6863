import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { InvalidArgumentError } from 'commander';
import { formatDuration, isTerminal } from '@codefleet/core';
import { latestRun, type JournalEntry, type RunQuery, type WorkerInfo } from '@codefleet/store';
import type { ReportCancelled } from '@codefleet/dashboard';
import { reportSafely } from '@codefleet/requester';
import { displayText } from '../format.js';
import type { Runtime } from '../runtime.js';

// What an operator asks of the fleet from a terminal: which runs, which workers, stop
// this one. Every action is written to the run store's journal with who and when.

/**
 * `runs` filter options as commander hands them over: the store's query, except that
 * `since` / `until` may still be ages (`2h`) that {@link parseWhen} turns into ISO times.
 */
export type RunsOptions = RunQuery;

const units: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * `--since` / `--until`: an ISO time, or an age back from `now` such as `30m`, `2h`, `3d`
 * (units s, m, h, d, w). Resolves the ISO time the store compares with.
 */
export function parseWhen(flag: string, value: string, now: Date): string {
  const relative = /^(\d{1,6})([smhdw])$/.exec(value.trim());
  if (relative)
    return new Date(now.getTime() - Number(relative[1]) * (units[relative[2] ?? 's'] ?? 1_000)).toISOString();
  // Dates alone (2026-11-24) and full ISO times; anything Date.parse guesses at beyond that is refused.
  if (/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value.trim())) {
    const ms = Date.parse(value.trim());
    if (Number.isFinite(ms)) return new Date(ms).toISOString();
  }
  throw new InvalidArgumentError(
    `${flag} ${JSON.stringify(value)}: expected an ISO time (2026-11-24T09:00Z) or an age such as 30m, 2h, 3d`,
  );
}

/** The store query `runs` options ask for. */
export function runsQuery(options: RunsOptions, now = new Date()): RunQuery {
  return {
    limit: options.limit ?? 50,
    ...(options.state === undefined ? {} : { state: options.state }),
    ...(options.repo === undefined ? {} : { repo: options.repo }),
    ...(options.source === undefined ? {} : { source: options.source }),
    ...(options.agent === undefined ? {} : { agent: options.agent }),
    ...(options.since === undefined ? {} : { since: parseWhen('--since', options.since, now) }),
    ...(options.until === undefined ? {} : { until: parseWhen('--until', options.until, now) }),
    ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
  };
}

/** `codefleet workers`: the live workers in the run store's registry. */
export async function listWorkers(rt: Runtime, json: boolean, now = new Date()): Promise<string> {
  const workers = await rt.store.listWorkers();
  if (json) return JSON.stringify(workers, null, 2);
  if (workers.length === 0) return 'no live workers (a worker shows here while it heartbeats)';
  return workers.map((w) => workerLines(w, now).map(displayText).join('\n')).join('\n');
}

function workerLines(w: WorkerInfo, now: Date): string[] {
  const seen = formatDuration(now.getTime() - Date.parse(w.lastHeartbeat));
  const head = `${w.id}  ${w.backend}:${w.queue}  ${w.jobs.length}/${w.concurrency} busy${w.draining ? '  draining' : ''}  v${w.version}  up since ${w.startedAt}  last heartbeat ${seen} ago`;
  return [
    head,
    ...w.jobs.map((j) => `    ${j.jobId}  since ${j.startedAt}  ${Array.from(j.title).slice(0, 60).join('')}`),
  ];
}

/** Who runs this command, for the journal: the OS user, else $USER, else "cli". */
export function operator(rt: Pick<Runtime, 'loaded'>): string {
  try {
    return userInfo().username;
  } catch {
    // No passwd entry (a container running as an arbitrary uid).
    return rt.loaded.env.USER ?? 'cli';
  }
}

/** Writes an action to the journal; a store that cannot take it is said, never fatal: the action happened. */
export async function journalAction(
  rt: Runtime,
  entry: Omit<Extract<JournalEntry, { kind: 'action' }>, 'kind' | 'at' | 'via'>,
  warn: (line: string) => void,
): Promise<void> {
  await rt.store
    .record({ kind: 'action', via: 'cli', at: new Date().toISOString(), ...entry })
    .catch((error: unknown) => {
      warn(
        `warning: the ${entry.action} was done but could not be written to the journal: ${(error as Error).message}`,
      );
    });
}

/** The task a `cancel` argument names: a run id, a job id (its latest run), or a task key. */
async function cancelTarget(
  rt: Runtime,
  target: string,
): Promise<{ taskKey: string; runId?: string; jobId?: string; stage?: string }> {
  const run = (await rt.store.get(target)) ?? (await latestRun(rt.store, target)).run;
  if (run !== undefined)
    return { taskKey: run.job.idempotency_key, runId: run.run_id, jobId: run.job.id, stage: run.stage };
  // No run yet: a queued job. A CLI or API job's task key is its id, and an issue's or a
  // chat thread's key is given as is; a cancel for either is seen when a worker claims it.
  return { taskKey: target };
}

/**
 * `codefleet cancel`: a job still waiting in the queue is taken out of it now (its run
 * recorded as cancelled); otherwise the worker running the task, or the one that claims it,
 * is asked to stop. The journal says who asked, and why when `reason` is given. Resolves the
 * exit code.
 */
export async function cancel(
  rt: Runtime,
  target: string,
  io: { out: (line: string) => void; err: (line: string) => void },
  reason?: string,
): Promise<number> {
  if (target.trim() === '' || target.length > 512)
    throw new InvalidArgumentError('expected a run id, job id or task key (1..512 characters)');
  // Loaded here, as for retry and dlq drop: the reason's rule and the queued cancel are the dashboard's.
  const { reasonOf, removeQueuedJob } = await import('@codefleet/dashboard');
  const given = reasonOf(reason, undefined);
  if ('problem' in given) throw new InvalidArgumentError(given.problem);
  const found = await cancelTarget(rt, target);
  if (found.stage !== undefined && isTerminal(found.stage as Parameters<typeof isTerminal>[0])) {
    io.err(`run ${found.runId} already finished (${found.stage}); nothing to cancel`);
    return 1;
  }
  const by = operator(rt);
  const why = given.reason === undefined ? {} : { detail: given.reason };
  if (found.runId === undefined) {
    const deps = { queue: rt.queue, store: rt.store, now: () => new Date(), reportCancelled: cancelReporter(rt) };
    const removed = await removeQueuedJob(deps, target, by);
    if (removed !== undefined) {
      const { job, runId } = removed;
      const ids = { jobId: target, ...(runId === undefined ? {} : { runId }) };
      await journalAction(
        rt,
        { action: 'cancel', by, ...ids, ...(job ? { taskKey: job.idempotency_key } : {}), ...why },
        io.err,
      );
      io.out(`cancelled queued job ${displayText(target)}: taken out of the queue before any worker claimed it`);
      return 0;
    }
  }
  await rt.store.requestCancel(found.taskKey, by);
  const ids = {
    ...(found.runId === undefined ? {} : { runId: found.runId }),
    ...(found.jobId === undefined ? {} : { jobId: found.jobId }),
  };
  await journalAction(rt, { action: 'cancel', by, taskKey: found.taskKey, ...ids, ...why }, io.err);
  io.out(
    found.runId === undefined
      ? `cancel requested for ${displayText(found.taskKey)} (not in the queue here: an issue's or a chat thread's job with this task key stops when a worker claims it)`
      : `cancel requested for run ${found.runId} (task ${displayText(found.taskKey)}); its worker stops it at the next heartbeat`,
  );
  return 0;
}

/**
 * Reports a job cancelled in the queue to whoever asked for it (its issue, chat thread or
 * callback), through the requesters a worker would use, once, under the reports' deadline;
 * a failure is logged, never thrown.
 */
export function cancelReporter(rt: Runtime): ReportCancelled {
  return async (job, run, by) => {
    try {
      await reportSafely(await rt.requester(), { kind: 'cancelled', job, run, by }, rt.log);
    } catch (error) {
      // Opening the requesters failed (the forge's credentials): the cancel stands.
      rt.log.warn(
        { err: error, event: 'report.failed', job_id: job.id, report: 'cancelled' },
        'could not send the cancelled report',
      );
    }
  };
}

/**
 * `codefleet retry <run-id>`: runs a finished run's task again as a new job, as the
 * dashboard's Retry does (the same function: once per run, whoever asks first).
 * Resolves the exit code.
 */
export async function retry(
  rt: Runtime,
  runId: string,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  if (runId.trim() === '' || runId.length > 512)
    throw new InvalidArgumentError('expected a run id (1..512 characters)');
  // Loaded here: the dashboard's module (a web server) is not what the other fleet commands need.
  const { retryRun } = await import('@codefleet/dashboard');
  const result = await retryRun(
    { queue: rt.queue, store: rt.store, by: operator(rt), via: 'cli', now: () => new Date(), newId: randomUUID },
    runId,
  );
  if (result.status !== 200) {
    err(displayText(result.message));
    return 1;
  }
  out(displayText(result.message));
  return 0;
}
