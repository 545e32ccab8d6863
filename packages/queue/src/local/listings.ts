import { parseJobJson, type Job } from '@codefleet/core';
import type { DeadLetter, PendingJob, QueueStats } from '../port.js';
import { priorityLevel, type ConcurrencyLimits } from '../concurrency.js';
import type { SqliteStatement } from '@codefleet/sqlite';
import { holdOf, type FullGroups } from './slots.js';

// What the embedded queue shows of its rows without moving any: counts, the jobs waiting and
// the dead letters. Each read is one prepared statement of the queue's (`sql`).

/** A row of the `jobs` table, as `SELECT *` reads it. */
export interface JobRow {
  seq: number;
  id: string;
  idempotency_key: string | null;
  payload: string;
  state: 'ready' | 'leased' | 'done' | 'dead';
  priority: number;
  enqueued_at: number;
  attempts: number;
  max_attempts: number;
  available_at: number;
  lease_token: string | null;
  leased_by: string | null;
  dead_reason: string | null;
  finished_at: number | null;
}

/** The queue's statement for an SQL text, prepared once. */
type Sql = (text: string) => SqliteStatement;

/** How much of a malformed payload the dead letter keeps. */
const rawLimit = 4096;

/** The job a stored payload holds, or undefined when it is malformed (kept raw where it is shown). */
export function jobOrUndefined(payload: string): Job | undefined {
  try {
    return parseJobJson(payload);
  } catch {
    return undefined;
  }
}

export function readStats(sql: Sql, queue: string): QueueStats {
  const rows = sql(
    `SELECT state, available_at > ? AS later, count(*) AS n FROM jobs WHERE queue = ? GROUP BY state, later`,
  ).all(Date.now(), queue) as { state: JobRow['state']; later: number; n: number }[];
  const stats: QueueStats = { ready: 0, delayed: 0, inFlight: 0, deadLetter: 0, completed: 0, depth: 0 };
  for (const { state, later, n } of rows) {
    if (state === 'ready') stats[later ? 'delayed' : 'ready'] += n;
    // An expired lease is still counted in flight until a claimer takes it over.
    else if (state === 'leased') stats.inFlight += n;
    else if (state === 'dead') stats.deadLetter += n;
    else stats.completed += n;
  }
  stats.depth = stats.ready + stats.delayed;
  // Ready rows (visible or delayed); a leased one, even expired, is in flight as above.
  const oldest = sql(`SELECT MIN(enqueued_at) AS at FROM jobs WHERE queue = ? AND state = 'ready'`).get(queue) as {
    at: number | null;
  };
  if (oldest.at !== null) stats.oldestQueuedAt = oldest.at;
  return stats;
}

/** A waiting job's row as {@link readPending} reads it. */
interface PendingRow {
  id: string;
  repo: string;
  requested_by: string | null;
  priority: number;
  enqueued_at: number;
  available_at: number;
  title: unknown;
}

/** The jobs waiting (visible, delayed or held), longest-waiting first; malformed rows are not listed. */
export function readPending(sql: Sql, queue: string, limit: number): PendingRow[] {
  return sql(
    `SELECT id, repo, requested_by, priority, enqueued_at, available_at,
        CASE WHEN json_valid(payload) THEN json_extract(payload, '$.title') END AS title FROM jobs
      WHERE queue = ? AND state = 'ready' AND repo IS NOT NULL ORDER BY enqueued_at, seq LIMIT ?`,
  ).all(queue, limit) as PendingRow[];
}

/** The rows of {@link readPending} as the port lists them, each with the limit that holds it now. */
export function pendingJobsOf(
  rows: readonly PendingRow[],
  now: number,
  limits: ConcurrencyLimits | undefined,
  full: FullGroups,
): PendingJob[] {
  return rows.map((row): PendingJob => {
    const job = { repo: row.repo, requested_by: row.requested_by ?? '' };
    // A delayed job waits for its delay first; a limit is said only of a job it holds now.
    const heldBy = row.available_at <= now ? holdOf(job, limits, full) : undefined;
    return {
      id: row.id,
      repo: row.repo,
      requestedBy: job.requested_by,
      priority: priorityName(row.priority),
      ...(typeof row.title === 'string' ? { title: row.title } : {}),
      enqueuedAt: row.enqueued_at,
      ...(heldBy ? { heldBy } : {}),
    };
  });
}

export function readDeadLetters(sql: Sql, queue: string, limit: number): DeadLetter[] {
  const rows = sql(`SELECT * FROM jobs WHERE queue = ? AND state = 'dead' ORDER BY finished_at, seq LIMIT ?`).all(
    queue,
    limit,
  ) as JobRow[];
  return rows.map((row) => {
    const job = jobOrUndefined(row.payload);
    return {
      id: row.id,
      reason: row.dead_reason ?? 'unknown',
      attempts: row.attempts,
      deadAt: row.finished_at ?? 0,
      ...(job ? { job } : {}),
      raw: row.payload.length > rawLimit ? `${row.payload.slice(0, rawLimit)}…` : row.payload,
    };
  });
}

/** The job model's word for a stored priority level. */
function priorityName(level: number): Job['priority'] {
  return level >= priorityLevel.high ? 'high' : level <= priorityLevel.low ? 'low' : 'normal';
}
