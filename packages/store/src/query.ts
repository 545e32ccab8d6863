import {
  CodefleetError,
  isTerminal,
  parseRun,
  runOutcomes,
  runSourceName,
  sourceNames,
  stages,
  truncateHead,
  type RunRecord,
  type Stage,
} from '@codefleet/core';
import {
  journalLimit,
  maxWorkerJobs,
  type JournalEntry,
  type JournalQuery,
  type RunQuery,
  type RunSummary,
  type WorkerInfo,
} from './port.js';

// What both adapters share: the summary of a run, the facets a query filters on, the
// checking of a query, and the bounds on what callers (the dashboard, a chat) hand in.

/** The fields `codefleet runs` shows. */
export function summarize(run: RunRecord): RunSummary {
  const created = Date.parse(run.created_at);
  const updated = Date.parse(run.updated_at);
  const facets = facetsOf(run);
  const worker = run.attempts[run.attempts.length - 1]?.worker_id;
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

/**
 * What `RunQuery` filters on besides time: small, so the Redis store can keep it beside the
 * record. Facets saved before `kind` existed hold the kind in `source`: read them from the record.
 */
export interface RunFacets {
  stage: string;
  outcome?: string;
  repo: string;
  /** The run's source name (`runSourceName`). */
  source: string;
  /** `job.source.kind`, for the kind names `RunQuery.source` still takes. */
  kind?: string;
  agent?: string;
}

export function facetsOf(run: RunRecord): RunFacets {
  const agent = run.job.agent ?? run.agent_runs[run.agent_runs.length - 1]?.agent;
  return {
    stage: run.stage,
    ...(run.outcome === undefined ? {} : { outcome: run.outcome }),
    repo: run.job.repo,
    source: runSourceName(run),
    kind: run.job.source.kind,
    ...(agent === undefined ? {} : { agent }),
  };
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
}

/** Candidates examined by one filtered `list` at most, in either store. */
export const scanLimit = 10_000;

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
  };
}

/** Whether a run with these facets passes the query's non-time filters. */
export function matchesFacets(facets: RunFacets, query: CheckedQuery): boolean {
  if (query.repo !== undefined && facets.repo !== query.repo) return false;
  if (query.source !== undefined && !matchesSource(facets, query.source)) return false;
  if (query.agent !== undefined && facets.agent !== query.agent) return false;
  const state = query.state;
  if (state === undefined) return true;
  if ('active' in state) return !isTerminal(facets.stage as RunRecord['stage']);
  if ('outcome' in state) return facets.outcome === state.outcome;
  return facets.stage === state.stage;
}

function matchesSource(facets: RunFacets, source: CheckedSource): boolean {
  return 'name' in source ? facets.source === source.name : facets.kind === source.kind;
}

/** The facets of a stored record; undefined when it cannot be read (it matches no filter). */
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
    jobs: worker.jobs.slice(0, maxWorkerJobs).map((job) => ({ ...job, title: truncateHead(job.title, 200) })),
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

/** Rows read per page while matching a source name. */
const namePage = 200;

/**
 * The rows whose run has source name `name`, newest first: a name is computed from the record
 * (runs saved before names list under theirs), so the SQLite store matches it here, page by page,
 * within the same bound on candidates as the Redis store (`scanLimit`).
 */
export function walkByName(
  page: (limit: number, offset: number) => { run_id: string; record: string }[],
  name: string,
  limit: number,
): { run_id: string; record: string }[] {
  const found: { run_id: string; record: string }[] = [];
  for (let offset = 0; found.length < limit && offset < scanLimit; offset += namePage) {
    const rows = page(namePage, offset);
    for (const row of rows) if (facetsOfStored(row.run_id, row.record)?.source === name) found.push(row);
    if (rows.length < namePage) break;
  }
  return found.slice(0, limit);
}
