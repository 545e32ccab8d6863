import type { RunOutcome, RunRecord, Stage } from '@codefleet/core';
import type { RequestKey } from './request-key.js';
import type { FleetStatsReader, SpendBy } from './fleet-stats.js';

/**
 * Where run records and task leases live, so every worker and `codefleet runs` / `show`
 * on any host see the same: SQLite for one host, Redis for a fleet.
 *
 * Promises:
 * - `save` is an upsert by `run_id` that never lets an older version overwrite a newer
 *   one. Versions order by attempt count, then stage-history length, then `updated_at`:
 *   a stale worker still on an earlier attempt cannot roll back the run of the worker
 *   that took the task over, however late it writes. Reads return validated records.
 * - **Task leases** ({@link TaskLeases}): at most one live owner per task key; the owner's
 *   token fences publishing, and a rejected late write is recorded.
 * - Filters and order (`list`, `page`) read indexes the store keeps beside the records, so a
 *   page costs about the same at 100 runs as at 100,000, and every match is found.
 * - **Retention** (`trim`): finished runs past an age or a count, old journal entries and
 *   expired request keys are deleted in short batches, never a running job's run.
 * Leaves out: querying inside records beyond {@link RunQuery}.
 */
export interface RunStore
  extends TaskLeases, CancelRequests, RequestKeys, WorkerRegistry, Journal, SpendLedger, FleetStatsReader {
  save(run: RunRecord): Promise<void>;
  /** Rejects with `invalid_run`, naming the run, when its stored record cannot be read. */
  get(runId: string): Promise<RunRecord | undefined>;
  /** Newest first (by created_at); filters combine with AND. A record that cannot be read is listed flagged (`unreadable`). */
  list(query?: RunQuery): Promise<RunSummary[]>;
  /**
   * `list`'s page and what a pager needs around it: how many runs the filters match in all,
   * and the cursor of the next page. Every filter is answered completely: a run that matches
   * is on some page however far back it is. A page costs about the same at any history size
   * (indexes on every filtered field); the total may cost a walk over the matching runs' index
   * entries (SQLite counts them), never over the records.
   */
  page(query?: RunQuery): Promise<RunPage>;
  /**
   * Deletes what `policy` lets go, a batch at a time with a turn of the event loop between
   * batches (a trim of 100,000 runs never holds the process or the file for long): runs
   * created before `before` or older than the newest `keepRuns`, unless still active; journal
   * entries and rejected late writes from before `before`; request keys whose TTL has passed
   * (Redis drops those, and rejections, itself). Resolves how many of each went.
   */
  trim(policy: TrimPolicy): Promise<TrimCounts>;
  close(): Promise<void>;
}

/** What {@link RunStore.trim} may delete. Neither bound set: only expired request keys go. */
export interface TrimPolicy {
  /** Epoch ms: runs created and journal entries written before it go. */
  before?: number;
  /** The newest this many runs stay (active ones always stay, and count). */
  keepRuns?: number;
  /** Rows per batch; default {@link trimBatch}. */
  batch?: number;
}

/** What one {@link RunStore.trim} deleted. */
export interface TrimCounts {
  runs: number;
  journal: number;
  requestKeys: number;
  /** Rejected late writes (see {@link TaskLeases.rejections}); Redis expires them itself. */
  rejections: number;
}

/** Rows a trim deletes per batch: about a millisecond or two of SQLite work each. */
export const trimBatch = 500;

/** Which runs `list` returns. A bad `state`, `since` or `until` is refused (`invalid_job`). */
export interface RunQuery {
  /** Default 50, at most 1000. */
  limit?: number;
  /**
   * 'active' = not finished (not done, failed or cancelled); an outcome name
   * ('succeeded' | 'failed' | 'cancelled' | 'no_changes' | 'dod_failed') matches the
   * outcome; any other stage name matches the stage.
   */
  state?: string;
  /** Exact `job.repo`. */
  repo?: string;
  /**
   * A source name (`sourceNames` of @codefleet/core: github-issue, ci-follow-up, slack, redrive...),
   * or a job source kind as before names ('issue' | 'chat' | 'api'; see `sourceKindFilters`).
   * Anything else is refused (`invalid_job`) naming them. Runs stored before names list under
   * theirs, computed from the record.
   */
  source?: string;
  /** The agent as on the summary: `job.agent`, else the agent that ran. */
  agent?: string;
  /** ISO times, bounds (inclusive) on `created_at`. */
  since?: string;
  until?: string;
  /**
   * Where to go on: a previous page's `nextCursor` (opaque), with the same filters. The page
   * starts after that run, so runs saved meanwhile neither repeat nor shift it. One this store
   * did not make is refused (`invalid_job`).
   */
  cursor?: string;
}

/**
 * A store's one-time indexing of the runs it already holds, for the log: a store written by
 * a version before its run indexes is migrated when it opens (SQLite) or at its first read
 * (Redis), which takes a while at tens of thousands of runs.
 */
export type RunIndexEvent =
  | { event: 'started'; store: 'sqlite' | 'redis'; schema: number }
  | { event: 'finished'; store: 'sqlite' | 'redis'; schema: number; runs: number; durationMs: number };

/** One page of runs (see `RunStore.page`). */
export interface RunPage {
  /** Newest first, at most the query's limit. */
  runs: RunSummary[];
  /** Every run the filters match, on this page and the others (the cursor and limit aside). */
  total: number;
  /** The `cursor` of the next page; absent on the last. */
  nextCursor?: string;
}

/**
 * The fleet's money spent per UTC day (`costs.budget_usd.day`): every worker adds each
 * agent run's cost, and every worker reads the total before it claims. Days are
 * `YYYY-MM-DD` in UTC; amounts are US dollars. Adding is atomic across processes and
 * hosts, so two workers finishing at once both count. Leaves out: per-job totals (the run
 * records hold those) and retention beyond a few weeks (Redis expires a day's total after
 * 40 days; SQLite keeps one row a day); the amounts attributed to a repository, agent or
 * model (`by`) are kept 40 days on both.
 */
export interface SpendLedger {
  /**
   * Adds `usd` to `day`'s total and resolves the new total. A day that is not `YYYY-MM-DD`
   * or an amount that is not a finite number ≥ 0 is refused (`invalid_job`): a caller bug,
   * never a silent zero. `by` names who spent it (repository, agent, model), for the fleet's
   * top spenders (`fleetStats`); a facet left out is not attributed.
   */
  addSpend(day: string, usd: number, by?: SpendBy): Promise<number>;
  /** What `day` has spent so far; 0 for a day with nothing. */
  spentOn(day: string): Promise<number>;
}

/** Live workers, so the dashboard / `codefleet workers` can list them. */
export interface WorkerRegistry {
  /** Upserts the worker's entry; it disappears from listWorkers after ttlMs without another. */
  heartbeatWorker(worker: WorkerInfo, ttlMs: number): Promise<void>;
  removeWorker(workerId: string): Promise<void>;
  /** Unexpired entries, ordered by id. */
  listWorkers(): Promise<WorkerInfo[]>;
}

/** One live worker. Stores keep at most {@link maxWorkerJobs} jobs and cut long titles. */
export interface WorkerInfo {
  /** `${hostname}:${pid}:${random}`, stable for the process. */
  id: string;
  host: string;
  pid: number;
  version: string;
  queue: string;
  backend: string;
  concurrency: number;
  /** ISO. */
  startedAt: string;
  /** ISO, set by the caller at each heartbeat. */
  lastHeartbeat: string;
  draining: boolean;
  jobs: WorkerJob[];
}

/** A job a worker is running. */
export interface WorkerJob {
  jobId: string;
  runId: string;
  taskKey: string;
  title: string;
  /** ISO. */
  startedAt: string;
  /** Where the job is, as its worker last wrote it (what its status line shows); absent until the pipeline reports. */
  progress?: WorkerJobProgress;
}

/**
 * What a running job is doing: the stage, pass and inner attempt the pipeline reported last,
 * the step running now and its last output lines. Stores keep at most
 * {@link maxProgressLines} lines of at most 1 000 characters.
 */
export interface WorkerJobProgress {
  stage: string;
  pass?: string;
  innerAttempt?: number;
  /** `agent`, or a check (`install`, `build`, `test`, `dod`, `baseline build`…); absent between steps. */
  step?: string;
  /** ISO: when the step's output began. */
  stepStartedAt?: string;
  /**
   * The step's last lines that say something, oldest first, secrets masked. Agent and
   * repository output: escape sequences and markup are kept as written, for whoever shows
   * them to make safe.
   */
  lines: string[];
}

/** Output lines kept on a job's progress. */
export const maxProgressLines = 20;

/**
 * What happened to runs from outside the pipeline: operator actions and undelivered
 * reports. Kept bounded: the newest {@link journalLimit} entries of each kind (so a burst
 * of actions never pushes out the one undelivered report an operator must see).
 */
export interface Journal {
  record(entry: JournalEntry): Promise<void>;
  /** Newest first; default limit 50, at most 1000. */
  journal(query?: JournalQuery): Promise<JournalEntry[]>;
}

/** Which journal entries to read. */
export interface JournalQuery {
  runId?: string;
  kind?: JournalEntry['kind'];
  limit?: number;
}

/**
 * One journal entry. `at` is ISO. An action's `by` is who (an OS user, a login), `via`
 * where from; a `drop` (of a dead letter) has the operator's reason in `detail`. An undelivered report names the report's kind (`finished`, `failed`,
 * `cancelled`, `answered`), the requester that could not deliver it and the last error.
 */
export type JournalEntry =
  | {
      kind: 'action';
      action: 'cancel' | 'retry' | 'redrive' | 'drop';
      runId?: string;
      jobId?: string;
      taskKey?: string;
      by: string;
      via: 'cli' | 'dashboard' | 'chat' | 'api' | 'issue';
      at: string;
      detail?: string;
    }
  | {
      kind: 'undelivered_report';
      runId: string;
      jobId: string;
      report: string;
      requester: string;
      error: string;
      at: string;
    };

/** Journal entries kept per kind; older ones are dropped. */
export const journalLimit = 10_000;
/** Jobs kept on one worker entry (a worker runs `concurrency` of them; this bounds a bad caller). */
export const maxWorkerJobs = 256;

/**
 * Who owns a task right now. A worker takes the lease when it claims a job (token = the
 * queue lease's token), renews it with every heartbeat and releases it when the job is
 * settled. Before each publishing write (push, pull request, comment) it calls `fence`:
 * a worker that was paused past its lease, or cut off, finds its token replaced and
 * must not write.
 */
export interface TaskLeases {
  /** Takes the task for `token` unless another unexpired token holds it; true when ours (taken or renewed). */
  acquire(taskKey: string, token: string, ttlMs: number): Promise<boolean>;
  /** Extends the lease; false when `token` does not own the task any more. */
  renew(taskKey: string, token: string, ttlMs: number): Promise<boolean>;
  /**
   * True when `token` owns the task and the lease has not expired, checked atomically in
   * the store. A false is recorded as a rejection with `action` and `runId`.
   */
  fence(taskKey: string, token: string, action: string, runId: string): Promise<boolean>;
  /** Gives the task up if `token` still owns it. */
  release(taskKey: string, token: string): Promise<void>;
  /**
   * `release(from)` then `acquire(to)`, in one round trip where the store has them: a
   * worker going straight from a settled job to the next one (fetch-next) pays one
   * instead of two. Resolves what `acquire(to)` would.
   */
  handOver(
    from: { taskKey: string; token: string },
    to: { taskKey: string; token: string },
    ttlMs: number,
  ): Promise<boolean>;
  /** Rejected late writes of a task, oldest first. */
  rejections(taskKey: string): Promise<FenceRejection[]>;
}

/**
 * Cancellation asked for from outside (`/codefleet cancel` on the issue): recorded per task
 * key, seen by the worker at its next heartbeat or stage, which stops the job and
 * reports it cancelled. A new trigger of the task clears it.
 */
export interface CancelRequests {
  requestCancel(taskKey: string, by: string): Promise<void>;
  /** Who asked, when a cancel is pending for the task. */
  cancelRequested(taskKey: string): Promise<{ by: string; at: number } | undefined>;
  clearCancel(taskKey: string): Promise<void>;
}

/**
 * What a request from outside has already become, kept for `ttlMs` so a retried or replayed
 * request finds it: a Slack message (channel + ts) → its job, an HTTP `Idempotency-Key` → its
 * job, a chat thread → the job whose branch a follow-up continues. Keys are made by each package's key families
 * ({@link RequestKey}), at most 512 characters; values at most 4 096.
 */
interface RequestKeys {
  /**
   * Binds `key` to `value` unless it is bound (and unexpired) already, atomically across
   * processes. Resolves the value the key holds afterwards and whether this call bound it:
   * the first caller wins, every later one gets the winner's value.
   */
  bindRequest(key: RequestKey, value: string, ttlMs: number): Promise<{ value: string; bound: boolean }>;
  /** Binds `key` to `value`, replacing what it held. */
  setRequest(key: RequestKey, value: string, ttlMs: number): Promise<void>;
  /** The unexpired value of `key`. */
  lookupRequest(key: RequestKey): Promise<string | undefined>;
  /**
   * Frees `key` (a claim whose work did not happen): the next `bindRequest` binds it and
   * `lookupRequest` finds nothing. The one way to free a key; an empty value or a 1 ms TTL
   * written instead would read as a binding to whoever looked in between.
   */
  releaseRequest(key: RequestKey): Promise<void>;
}

/** A publishing write refused because the writer's lease was gone. */
export interface FenceRejection {
  taskKey: string;
  runId: string;
  token: string;
  action: string;
  /** Epoch ms. */
  at: number;
}

/** One line of `codefleet runs`. */
export interface RunSummary {
  runId: string;
  title: string;
  repo: string;
  /** Who asked for the job (`job.requested_by`): a GitHub login, chat user id or CLI user. */
  requestedBy: string;
  stage: Stage;
  outcome?: RunOutcome;
  attempts: number;
  pullRequest?: { number: number; url?: string; draft: boolean };
  createdAt: string;
  updatedAt: string;
  /** The run's source name (`runSourceName` of @codefleet/core); the raw kind when unreadable. */
  source: string;
  /** `job.agent`, else the agent of the latest agent run; absent before any. */
  agent?: string;
  /** Id of the worker that ran the last attempt. */
  worker?: string;
  /** created_at → updated_at: to the end once finished, to the last update while running. */
  durationMs?: number;
  /** The failing error's code when the run failed. */
  errorCode?: string;
  /** What the run's agent runs cost so far (`runCostUsd`); absent when none reported a cost. */
  costUsd?: number;
  /**
   * Set when the stored record cannot be read (corrupt, or written by an incompatible
   * version): why. The other fields are what could be read of it, `stage` the stored one
   * when it names a stage, else `failed` (nothing can go on from an unreadable record), and
   * `title` `(unreadable run record)` when it had none. `list` flags such a run instead of
   * failing, so one bad record is never an outage; `get` of it rejects with `invalid_run`.
   */
  unreadable?: string;
  taskKey: string;
  jobId: string;
}
