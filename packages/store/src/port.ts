import type { RunOutcome, RunRecord, Stage } from '@codefleet/core';

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
 * Leaves out: querying inside records, and retention (records are small; prune by age).
 */
export interface RunStore extends TaskLeases, CancelRequests, RequestKeys {
  save(run: RunRecord): Promise<void>;
  get(runId: string): Promise<RunRecord | undefined>;
  /** Newest first. */
  list(options?: { limit?: number }): Promise<RunSummary[]>;
  close(): Promise<void>;
}

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
  handOver(from: { taskKey: string; token: string }, to: { taskKey: string; token: string }, ttlMs: number): Promise<boolean>;
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
 * job, a chat thread → the job whose branch a follow-up continues. Keys are opaque strings
 * of at most 512 characters; values at most 4 096.
 */
export interface RequestKeys {
  /**
   * Binds `key` to `value` unless it is bound (and unexpired) already, atomically across
   * processes. Resolves the value the key holds afterwards and whether this call bound it:
   * the first caller wins, every later one gets the winner's value.
   */
  bindRequest(key: string, value: string, ttlMs: number): Promise<{ value: string; bound: boolean }>;
  /** Binds `key` to `value`, replacing what it held. */
  setRequest(key: string, value: string, ttlMs: number): Promise<void>;
  /** The unexpired value of `key`. */
  lookupRequest(key: string): Promise<string | undefined>;
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
}
