import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { openSqlite, type SqliteDatabase, type SqliteStatement } from '@codefleet/sqlite';
import { LeaseLostError, parseJob, parseJobJson, type Job } from '@codefleet/core';
import type {
  ClaimOptions,
  DeadLetter,
  CancelPendingResult,
  DropResult,
  EnqueueResult,
  Lease,
  PendingJob,
  Queue,
  QueueStats,
  QueueTrim,
  QueueTrimOptions,
  RedriveResult,
} from '../port.js';
import type { LocalQueueSettings } from '../settings.js';
import { queueDamaged } from './damage.js';
import { limitColumnsFromPayload, prepareDatabase } from './schema.js';
import { jobOrUndefined, pendingJobsOf, readDeadLetters, readPending, readStats, type JobRow } from './listings.js';
import { defaultAgingMs, priorityLevel } from '../concurrency.js';
import {
  fullGroups,
  nextToClaim,
  oddPrioritySqls,
  oldestOfPrioritySql,
  runningSql,
  type FullGroups,
  type RunningRow,
} from './slots.js';

/**
 * The embedded queue: one SQLite file (WAL) shared safely by every worker process on a
 * host. Claims are atomic because each runs in an IMMEDIATE transaction, which takes the
 * file's single write lock before reading.
 */
export class LocalQueue implements Queue {
  readonly backend = 'local' as const;
  readonly #db: SqliteDatabase;
  readonly #settings: Required<Omit<LocalQueueSettings, 'limits'>> & Pick<LocalQueueSettings, 'limits'>;
  #closed = false;
  readonly #statements = new Map<string, SqliteStatement>();

  constructor(settings: LocalQueueSettings) {
    if (!(settings.leaseMs > 0)) throw new RangeError(`leaseMs must be > 0, got ${settings.leaseMs}`);
    if (!(settings.maxAttempts >= 1)) throw new RangeError(`maxAttempts must be ≥ 1, got ${settings.maxAttempts}`);
    this.#settings = { pollMs: 50, agingMs: defaultAgingMs, ...settings };
    // A damaged file (truncated, overwritten, a malformed page) fails here or in the call
    // that meets the damage, with the path and the fix; it is never read as an empty queue.
    this.#db = openSqlite(settings.path, { schema: { table: 'jobs', create: prepareDatabase }, damaged: queueDamaged });
  }

  /** Reads the whole file (about 3 ms per MB): a page no other call has touched yet may be malformed. */
  async checkStorage(): Promise<void> {
    this.#db.quickCheck();
  }

  /**
   * Deletes jobs of every queue in the file that finished before `before`, and completed
   * ones past the newest `keepCompleted`, a batch per write transaction, with a turn of the
   * event loop between batches: the file is what grows.
   */
  async trim(options: QueueTrimOptions): Promise<QueueTrim> {
    const batch = options.batch ?? 500;
    const trimmed: QueueTrim = { completed: 0, deadLetters: 0 };
    const byAge = this.#sql(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs INDEXED BY jobs_finished WHERE state = ? AND finished_at < ? LIMIT ?)`,
    );
    const byCount = this.#sql(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs INDEXED BY jobs_finished WHERE state = 'done' ORDER BY finished_at DESC LIMIT ? OFFSET ?)`,
    );
    const { before, keepCompleted } = options;
    // Each pass deletes one batch per call and resolves how many went.
    const passes: [keyof QueueTrim, () => number][] = [];
    if (before !== undefined)
      passes.push(
        ['completed', () => Number(byAge.run('done', before, batch).changes)],
        ['deadLetters', () => Number(byAge.run('dead', before, batch).changes)],
      );
    if (keepCompleted !== undefined)
      passes.push(['completed', () => Number(byCount.run(batch, keepCompleted).changes)]);
    for (const [counted, removeBatch] of passes) {
      for (;;) {
        const changes = removeBatch();
        trimmed[counted] += changes;
        if (changes < batch) break;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
    return trimmed;
  }

  /** Prepared once per SQL text: compiling dominates the cost of these tiny statements. */
  #sql(text: string): SqliteStatement {
    let statement = this.#statements.get(text);
    if (!statement) {
      statement = this.#db.prepare(text);
      this.#statements.set(text, statement);
    }
    return statement;
  }

  async enqueue(input: Job): Promise<EnqueueResult> {
    const job = parseJob(input);
    return this.#insert(job.id, job.idempotency_key, JSON.stringify(job), priorityLevel[job.priority], job);
  }

  /**
   * Writes a payload as another producer might have: unvalidated. Tests and tools use it
   * to prove that malformed messages are dead-lettered rather than crash a worker.
   */
  async injectRaw(payload: string): Promise<string> {
    return this.#insert(`raw-${randomUUID()}`, null, payload, priorityLevel.normal).id;
  }

  #insert(
    id: string,
    key: string | null,
    payload: string,
    priority: number,
    job?: Pick<Job, 'repo' | 'requested_by'>,
  ): EnqueueResult {
    const q = this.#settings.name;
    const now = Date.now();
    return this.#db
      .transaction((): EnqueueResult => {
        const active =
          key === null
            ? undefined
            : (this.#sql(
                `SELECT id FROM jobs WHERE queue = ? AND idempotency_key = ? AND state IN ('ready', 'leased')`,
              ).get(q, key) as { id: string } | undefined);
        if (active) return { id: active.id, deduplicated: true };
        // The same job id again (a producer's own retry) is the same job, whatever its state.
        const same = this.#sql(`SELECT id FROM jobs WHERE queue = ? AND id = ?`).get(q, id);
        if (same) return { id, deduplicated: true };
        this.#sql(
          `INSERT INTO jobs (queue, id, idempotency_key, payload, state, priority, max_attempts, available_at, enqueued_at,
          repo, requested_by) VALUES (?, ?, ?, ?, 'ready', ?, ?, ?, ?, ?, ?)`,
        ).run(
          q,
          id,
          key,
          payload,
          priority,
          this.#settings.maxAttempts,
          now,
          now,
          job?.repo ?? null,
          job?.requested_by ?? null,
        );
        return { id, deduplicated: false };
      })
      .immediate();
  }

  async claim(options: ClaimOptions): Promise<Lease | undefined> {
    const deadline = Date.now() + (options.waitMs ?? 0);
    for (;;) {
      if (this.#closed || options.signal?.aborted) return undefined;
      const lease = this.#claimNow(options.workerId);
      if (lease) return lease;
      const remaining = deadline - Date.now();
      if (remaining <= 0) return undefined;
      try {
        await sleep(Math.min(this.#settings.pollMs, remaining), undefined, { signal: options.signal });
      } catch {
        return undefined; // aborted while waiting
      }
    }
  }

  #claimNow(workerId: string): Lease | undefined {
    const q = this.#settings.name;
    const oldest = this.#sql(oldestOfPrioritySql);
    const oldestOdd = oddPrioritySqls.map((sql) => this.#sql(sql));
    const levels = Object.values(priorityLevel);
    return this.#db
      .transaction((): Lease | undefined => {
        for (;;) {
          const now = Date.now();
          // A job of a full group is passed over where it is: it stays ready, no attempt spent.
          const full = this.#fullGroups(now);
          const [repos, requesters] = [JSON.stringify(full.repos), JSON.stringify(full.requesters)];
          const candidates = levels.map((p) => oldest.get(q, p, now, repos, requesters) as JobRow | undefined);
          for (const odd of oldestOdd) candidates.push(odd.get(q, now, repos, requesters) as JobRow | undefined);
          const row = nextToClaim(candidates, now, this.#settings.agingMs);
          if (!row) return undefined;
          if (row.state === 'leased' && row.attempts >= row.max_attempts) {
            this.#bury(
              row.seq,
              `lease expired on attempt ${row.attempts} of ${row.max_attempts} (worker ${row.leased_by ?? '?'} stopped heartbeating); attempts exhausted`,
              now,
            );
            continue;
          }
          let job: Job;
          try {
            job = parseJobJson(row.payload);
          } catch (error) {
            this.#bury(row.seq, `malformed job: ${error instanceof Error ? error.message : String(error)}`, now);
            continue;
          }
          const token = randomUUID();
          const expiresAt = now + this.#settings.leaseMs;
          this.#sql(
            `UPDATE jobs SET state = 'leased', attempts = attempts + 1, lease_token = ?, leased_by = ?, available_at = ?
          WHERE seq = ?`,
          ).run(token, workerId, expiresAt, row.seq);
          return this.#lease(row.seq, job, row.attempts + 1, row.max_attempts, token, expiresAt);
        }
      })
      .immediate();
  }

  /** The groups at their limit now; none without limits (no read at all). */
  #fullGroups(now: number): FullGroups {
    const { limits } = this.#settings;
    if (limits?.perRepo === undefined) return fullGroups([], limits);
    return fullGroups(this.#sql(runningSql).all(this.#settings.name, now) as RunningRow[], limits);
  }

  #bury(seq: number, reason: string, now: number): void {
    this.#sql(`UPDATE jobs SET state = 'dead', dead_reason = ?, lease_token = NULL, finished_at = ? WHERE seq = ?`).run(
      reason,
      now,
      seq,
    );
  }

  #lease(seq: number, job: Job, attempt: number, maxAttempts: number, token: string, expiresAt: number): Lease {
    const db = this.#db;
    const leaseMs = this.#settings.leaseMs;
    // Every settlement re-checks the token inside its own transaction: only the holder of
    // the current claim may move the row.
    const owned = () => {
      const row = this.#sql(`SELECT * FROM jobs WHERE seq = ? AND state = 'leased' AND lease_token = ?`).get(
        seq,
        token,
      ) as JobRow | undefined;
      if (!row)
        throw new LeaseLostError(`lease on job ${job.id} was lost: another claimer took it over or it was settled`);
      return row;
    };
    const settle = <T>(fn: (row: JobRow, now: number) => T) =>
      db.transaction(() => fn(owned(), Date.now())).immediate();
    const lease: Lease = {
      job,
      attempt,
      maxAttempts,
      token,
      expiresAt,
      heartbeat: async () =>
        settle((_row, now) => {
          this.#sql(`UPDATE jobs SET available_at = ? WHERE seq = ?`).run(now + leaseMs, seq);
          (lease as { expiresAt: number }).expiresAt = now + leaseMs;
        }),
      ack: async () =>
        settle((_row, now) => {
          this.#sql(`UPDATE jobs SET state = 'done', lease_token = NULL, finished_at = ? WHERE seq = ?`).run(now, seq);
        }),
      retry: async ({ delayMs, reason }) =>
        settle((row, now) => {
          if (row.attempts >= row.max_attempts) {
            this.#bury(seq, `attempts exhausted (${row.attempts} of ${row.max_attempts}): ${reason}`, now);
            return 'dead_lettered' as const;
          }
          this.#sql(
            `UPDATE jobs SET state = 'ready', available_at = ?, last_error = ?, lease_token = NULL, leased_by = NULL WHERE seq = ?`,
          ).run(now + Math.max(0, delayMs), reason, seq);
          return 'retrying' as const;
        }),
      deadLetter: async (reason) => settle((_row, now) => this.#bury(seq, reason, now)),
      release: async () =>
        settle((_row, now) => {
          this.#sql(
            `UPDATE jobs SET state = 'ready', attempts = attempts - 1, available_at = ?, lease_token = NULL, leased_by = NULL WHERE seq = ?`,
          ).run(now, seq);
        }),
    };
    return lease;
  }

  async stats(): Promise<QueueStats> {
    return readStats((text) => this.#sql(text), this.#settings.name);
  }

  async pending(options: { limit?: number } = {}): Promise<PendingJob[]> {
    const now = Date.now();
    const rows = readPending((text) => this.#sql(text), this.#settings.name, options.limit ?? 100);
    return pendingJobsOf(rows, now, this.#settings.limits, this.#fullGroups(now));
  }

  async deadLetters(options: { limit?: number } = {}): Promise<DeadLetter[]> {
    return readDeadLetters((text) => this.#sql(text), this.#settings.name, options.limit ?? 100);
  }

  async redrive(id: string): Promise<RedriveResult> {
    const q = this.#settings.name;
    return this.#db
      .transaction((): RedriveResult => {
        const row = this.#sql(`SELECT * FROM jobs WHERE queue = ? AND id = ? AND state = 'dead'`).get(q, id) as
          JobRow | undefined;
        if (!row) return { status: 'not_found' };
        if (row.idempotency_key !== null) {
          const active = this.#sql(
            `SELECT id FROM jobs WHERE queue = ? AND idempotency_key = ? AND state IN ('ready', 'leased')`,
          ).get(q, row.idempotency_key) as { id: string } | undefined;
          if (active) return { status: 'duplicate_active', activeId: active.id };
        }
        // Back in the queue now: its wait (oldestQueuedAt) starts again, as a new job's would.
        const now = Date.now();
        this.#sql(
          `UPDATE jobs SET state = 'ready', attempts = 0, available_at = ?, enqueued_at = ?, dead_reason = NULL, finished_at = NULL,
        max_attempts = ?, ${limitColumnsFromPayload} WHERE seq = ?`,
        ).run(now, now, this.#settings.maxAttempts, row.seq);
        return { status: 'redriven', id };
      })
      .immediate();
  }

  /** A ready row (visible, delayed or held) is deleted in one statement: a claim takes it first or never. */
  async cancelPending(id: string): Promise<CancelPendingResult> {
    const row = this.#sql(`DELETE FROM jobs WHERE queue = ? AND id = ? AND state = 'ready' RETURNING payload`).get(
      this.#settings.name,
      id,
    ) as { payload: string } | undefined;
    if (row === undefined) return { status: 'not_found' };
    const job = jobOrUndefined(row.payload);
    return { status: 'cancelled', id, ...(job === undefined ? {} : { job }) };
  }

  async drop(id: string): Promise<DropResult> {
    const { changes } = this.#sql(`DELETE FROM jobs WHERE queue = ? AND id = ? AND state = 'dead'`).run(
      this.#settings.name,
      id,
    );
    return changes > 0 ? { status: 'dropped', id } : { status: 'not_found' };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }
}
