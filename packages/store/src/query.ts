import {
  CodefleetError,
  isTerminal,
  parseRun,
  runCostUsd,
  runOutcomes,
  runSourceName,
  sourceNames,
  stages,
  truncateHead,
  type RunOutcome,
  type RunRecord,
  type Stage,
} from '@codefleet/core';
import { readCursor, type PageCursor } from './page-cursor.js';
import {
  journalLimit,
  maxProgressLines,
  maxWorkerJobs,
  type JournalEntry,
  type JournalQuery,
  type RunQuery,
  type RunSummary,
  type WorkerInfo,
} from './port.js';

// What both adapters share: the summary of a run, the facets its indexes file it under, the
// checking of a query, and the bounds on what callers (the dashboard, a chat) hand in.

/** The fields `codefleet runs` shows. */
export function summarize(run: RunRecord): RunSummary {
  const created = Date.parse(run.created_at);
  const updated = Date.parse(run.updated_at);
  const facets = facetsOf(run);
  const worker = run.attempts[run.attempts.length - 1]?.worker_id;
  const costUsd = runCostUsd(run);
  return {
    runId: run.run_id,
    title: run.job.title,
    repo: run.job.repo,
    requestedBy: run.job.requested_by,
    stage: run.stage,
    ...(run.outcome === undefined ? {} : { outcome: run.outcome }),
    attempts: run.attempts.length,
    ...(run.pull_request === undefined
      ? {}
      : {
          pullRequest: {
            number: run.pull_request.number,
            draft: run.pull_request.draft,
            ...(run.pull_request.url === undefined ? {} : { url: run.pull_request.url }),
          },
        }),
    createdAt: run.created_at,
    updatedAt: run.updated_at,
    source: facets.source,
    ...(facets.agent === undefined ? {} : { agent: facets.agent }),
    ...(worker === undefined ? {} : { worker }),
    ...(Number.isFinite(created) && Number.isFinite(updated) ? { durationMs: Math.max(0, updated - created) } : {}),
    ...(run.error === undefined || run.outcome === 'succeeded' ? {} : { errorCode: run.error.code }),
    ...(costUsd === undefined ? {} : { costUsd }),
    taskKey: run.job.idempotency_key,
    jobId: run.job.id,
  };
}

/** A stored record read back; one that cannot be read rejects with `invalid_run` naming the run. */
export function readStored(runId: string, text: string): RunRecord {
  try {
    return parseRun(JSON.parse(text));
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new CodefleetError(
      'invalid_run',
      `run ${runId}: its stored record cannot be read (${truncateHead(reason, 300)})`,
      {
        verdict: 'permanent',
        cause,
        details: { runId },
      },
    );
  }
}

/**
 * The summary of a stored record: its own, or, when the record cannot be read, one flagged
 * `unreadable` with what could be read of it (see `RunSummary.unreadable`).
 */
export function summarizeStored(runId: string, text: string): RunSummary {
  try {
    return summarize(readStored(runId, text));
  } catch (error) {
    return unreadableSummary(runId, text, error instanceof Error ? error.message : String(error));
  }
}

function unreadableSummary(runId: string, text: string, reason: string): RunSummary {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    raw = undefined;
  }
  const str = (...path: string[]): string | undefined => {
    const value = path.reduce<unknown>(
      (node, key) => (node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined),
      raw,
    );
    return typeof value === 'string' ? truncateHead(value, 256) : undefined;
  };
  const stage = str('stage');
  return {
    runId,
    title: str('job', 'title') ?? '(unreadable run record)',
    repo: str('job', 'repo') ?? '',
    requestedBy: str('job', 'requested_by') ?? '',
    stage: stage !== undefined && stageNames.includes(stage) ? (stage as Stage) : 'failed',
    attempts: 0,
    createdAt: str('created_at') ?? '',
    updatedAt: str('updated_at') ?? '',
    source: str('job', 'source', 'kind') ?? '',
    taskKey: str('job', 'idempotency_key') ?? '',
    jobId: str('job', 'id') ?? runId,
    unreadable: reason,
  };
}

/** What `RunQuery` filters on, and the order of every page: each store indexes a run by these. */
export interface RunFacets {
  stage: Stage;
  /** Not finished (not done, failed or cancelled): `state=active`. */
  active: boolean;
  outcome?: RunOutcome;
  repo: string;
  /** The run's source name (`runSourceName`). */
  source: string;
  /** `job.source.kind`, for the kind names `RunQuery.source` still takes. */
  kind: string;
  /** `job.agent`, else the agent of the latest agent run, as on the summary. */
  agent?: string;
  /** `created_at` in epoch ms (0 when it is not a time): pages are newest first by it, then by run id. */
  createdMs: number;
}

export function facetsOf(run: RunRecord): RunFacets {
  const agent = run.job.agent ?? run.agent_runs[run.agent_runs.length - 1]?.agent;
  return {
    stage: run.stage,
    active: !isTerminal(run.stage),
    ...(run.outcome === undefined ? {} : { outcome: run.outcome }),
    repo: run.job.repo,
    source: runSourceName(run),
    kind: run.job.source.kind,
    ...(agent === undefined ? {} : { agent }),
    createdMs: createdMsOf(run.created_at),
  };
}

/** The order key of a run created at `iso`: its epoch ms, or 0 (the oldest) when it is not a time. */
export function createdMsOf(iso: string): number {
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms : 0;
}

/** A checked `RunQuery`: limit clamped, times as epoch ms, state resolved to what it matches. */
export interface CheckedQuery {
  limit: number;
  state?: { active: true } | { outcome: string } | { stage: string };
  repo?: string;
  source?: CheckedSource;
  agent?: string;
  sinceMs?: number;
  untilMs?: number;
  /** The run the page starts after (`RunQuery.cursor`). */
  after?: PageCursor;
}

/** A `RunQuery.source` resolved: a source name, or one of the job source kinds it took before names. */
type CheckedSource = { name: string } | { kind: string };

/**
 * The job source kinds `runs --source` took before source names, kept as they were: they
 * filter on `job.source.kind` (`api` holds the CI follow-ups and queue records written before
 * kinds `ci` and `record`). `cli` is both and means the same.
 */
export const sourceKindFilters = ['issue', 'chat', 'api'] as const;

/** Every value `RunQuery.source` takes: the source names, then the kinds. */
export const sourceFilters: readonly string[] = [...sourceNames, ...sourceKindFilters];

const outcomeNames: readonly string[] = runOutcomes;
const sourceNameList: readonly string[] = sourceNames;
const kindFilterList: readonly string[] = sourceKindFilters;

function checkSource(source: string): CheckedSource {
  if (sourceNameList.includes(source)) return { name: source };
  if (kindFilterList.includes(source)) return { kind: source };
  throw bad(
    `run query: source must be one of ${sourceNames.join(', ')} (or a job source kind: ${sourceKindFilters.join(', ')}); got ${JSON.stringify(source.slice(0, 64))}`,
  );
}
const stageNames: readonly string[] = stages;

function bad(message: string): CodefleetError {
  return new CodefleetError('invalid_job', message, { verdict: 'permanent' });
}

/** Clamps the limit to 1..`max` (default 50). */
function clampLimit(limit: number | undefined, max = 1_000): number {
  if (limit === undefined || !Number.isFinite(limit)) return 50;
  return Math.min(max, Math.max(1, Math.floor(limit)));
}

function time(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms))
    throw bad(`run query: ${name} must be an ISO time (got ${JSON.stringify(value.slice(0, 64))})`);
  return ms;
}

export function checkQuery(query: RunQuery = {}): CheckedQuery {
  const { state } = query;
  let resolved: CheckedQuery['state'];
  if (state !== undefined) {
    if (state === 'active') resolved = { active: true };
    else if (outcomeNames.includes(state)) resolved = { outcome: state };
    else if (stageNames.includes(state)) resolved = { stage: state };
    else
      throw bad(
        `run query: state must be active, an outcome (${outcomeNames.join(', ')}) or a stage (${stageNames.join(', ')}); got ${JSON.stringify(state.slice(0, 64))}`,
      );
  }
  const sinceMs = time('since', query.since);
  const untilMs = time('until', query.until);
  return {
    limit: clampLimit(query.limit),
    ...(resolved === undefined ? {} : { state: resolved }),
    ...(query.repo === undefined ? {} : { repo: query.repo }),
    ...(query.source === undefined ? {} : { source: checkSource(query.source) }),
    ...(query.agent === undefined ? {} : { agent: query.agent }),
    ...(sinceMs === undefined ? {} : { sinceMs }),
    ...(untilMs === undefined ? {} : { untilMs }),
    ...(query.cursor === undefined ? {} : { after: readCursor(query.cursor) }),
  };
}

/** The facets of a stored record; undefined when it cannot be read (it then matches no filter). */
export function facetsOfStored(runId: string, text: string): RunFacets | undefined {
  try {
    return facetsOf(readStored(runId, text));
  } catch {
    return undefined;
  }
}

/** The worker entry as stored: jobs and free text bounded, whatever the caller sent. */
export function boundWorker(worker: WorkerInfo): WorkerInfo {
  return {
    ...worker,
    jobs: worker.jobs.slice(0, maxWorkerJobs).map((job) => ({
      ...job,
      title: truncateHead(job.title, 200),
      ...(job.progress === undefined
        ? {}
        : {
            progress: {
              ...job.progress,
              lines: job.progress.lines.slice(-maxProgressLines).map((line) => truncateHead(line, 1_000)),
            },
          }),
    })),
  };
}

/** The journal entry as stored: free text (an operator's name, a detail, a report) bounded. */
export function boundEntry(entry: JournalEntry): JournalEntry {
  if (entry.kind === 'action') {
    return {
      ...entry,
      by: truncateHead(entry.by, 256),
      ...(entry.detail === undefined ? {} : { detail: truncateHead(entry.detail, 2_000) }),
    };
  }
  return {
    ...entry,
    report: truncateHead(entry.report, 4_000),
    requester: truncateHead(entry.requester, 256),
    error: truncateHead(entry.error, 2_000),
  };
}

/** A checked journal query. */
export function checkJournalQuery(query: JournalQuery = {}): Required<Pick<JournalQuery, 'limit'>> & JournalQuery {
  return { ...query, limit: clampLimit(query.limit) };
}

export { journalLimit };
