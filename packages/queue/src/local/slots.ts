import type { Job } from '@codefleet/core';
import { agedLevel, slotGroups, type ConcurrencyLimits, type HeldBy } from '../concurrency.js';

/** Running jobs of one repository and requester, as the local queue counts them. */
export interface RunningRow {
  repo: string;
  requested_by: string;
  n: number;
}

/**
 * The local queue's slots: a leased row whose lease has not expired holds one slot in
 * each of its groups. The count is read from the rows themselves, so it cannot drift: a
 * settled job is no longer leased, an expired lease no longer counts.
 */
export const runningSql = `SELECT repo, requested_by, count(*) AS n FROM jobs
  WHERE queue = ? AND state = 'leased' AND available_at > ? AND repo IS NOT NULL GROUP BY repo, requested_by`;

/** Which groups are full, in the shapes the claim query excludes them by. */
export interface FullGroups {
  /** Repositories at their limit. */
  repos: string[];
  /** `<repo>\n<requester>` pairs at their share. */
  requesters: string[];
  /** Why a job of a full group waits, by group key. */
  holds: Map<string, HeldBy>;
}

/** The groups that are full, given the running rows. */
export function fullGroups(running: RunningRow[], limits: ConcurrencyLimits | undefined): FullGroups {
  const counts = new Map<string, number>();
  const full: FullGroups = { repos: [], requesters: [], holds: new Map() };
  for (const row of running) {
    for (const group of slotGroups(row, limits)) {
      const n = (counts.get(group.key) ?? 0) + row.n;
      counts.set(group.key, n);
      if (n < group.max || full.holds.has(group.key)) continue;
      full.holds.set(group.key, group.held);
      if (group.held.limit === 'repo') full.repos.push(group.held.repo);
      else full.requesters.push(requesterPair(group.held.repo, group.held.requester));
    }
  }
  return full;
}

/** The first full group of `job`, if any. */
export function holdOf(
  job: Pick<Job, 'repo' | 'requested_by'>,
  limits: ConcurrencyLimits | undefined,
  full: FullGroups,
) {
  for (const group of slotGroups(job, limits)) {
    const held = full.holds.get(group.key);
    if (held) return held;
  }
  return undefined;
}

/** How the claim query names a requester's group: a newline never appears in a repository reference. */
function requesterPair(repo: string, requester: string): string {
  return `${repo}\n${requester}`;
}

const dueAndFree = `state IN ('ready', 'leased') AND available_at <= ?
  AND (repo IS NULL OR (repo NOT IN (SELECT value FROM json_each(?))
    AND repo || char(10) || coalesce(requested_by, '') NOT IN (SELECT value FROM json_each(?))))`;

/**
 * The longest-waiting due job (ready and visible, or leased and expired) of one stored
 * priority, not in a full group: one walk of the `jobs_waiting` index. Parameters: queue,
 * priority, now, full repos (JSON), full requester pairs (JSON).
 */
export const oldestOfPrioritySql = `SELECT * FROM jobs WHERE queue = ? AND priority = ? AND ${dueAndFree}
  ORDER BY enqueued_at, seq LIMIT 1`;

/**
 * The same above high and below low, priorities no producer writes (a row written into the
 * file by hand): never skipped, so a forged row still meets the claim that dead-letters it.
 * Empty index ranges, normally; the index is named because SQLite, without statistics,
 * would rather walk every ready row by state. Parameters: queue, now, full repos, full
 * requester pairs.
 */
export const oddPrioritySqls = ['priority > 2', 'priority < 0'].map(
  (range) => `SELECT * FROM jobs INDEXED BY jobs_waiting WHERE queue = ? AND ${range} AND ${dueAndFree}
  ORDER BY enqueued_at, seq LIMIT 1`,
);

/** A candidate row, as {@link nextToClaim} compares them. */
interface Candidate {
  seq: number;
  priority: number;
  enqueued_at: number;
}

/**
 * The job to claim among the longest-waiting due job of each stored priority: the highest
 * aged level (its own plus one per `agingMs` waited, at most high), then the longest
 * waiting. Within one stored priority the longest-waiting job also has the highest aged
 * level, so these few candidates give the same answer as sorting every waiting job, at the
 * cost of three index walks instead of a sort of them all.
 */
export function nextToClaim<T extends Candidate>(candidates: (T | undefined)[], now: number, agingMs: number) {
  let best: T | undefined;
  let bestLevel = -1;
  for (const row of candidates) {
    if (!row) continue;
    const level = agedLevel(row.priority, now - row.enqueued_at, agingMs);
    const older =
      best !== undefined &&
      (row.enqueued_at < best.enqueued_at || (row.enqueued_at === best.enqueued_at && row.seq < best.seq));
    if (level > bestLevel || (level === bestLevel && older)) {
      best = row;
      bestLevel = level;
    }
  }
  return best;
}
