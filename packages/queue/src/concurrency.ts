import type { Job } from '@codefleet/core';

/**
 * Concurrency groups and priority aging, the same on every adapter.
 *
 * A job needs a slot in each of its groups to be claimed: its repository's
 * (`perRepo` running jobs at most, fleet-wide) and, with a share set, its requester's
 * part of that repository (`max(1, floor(perRepo × share))`). A slot is held by a lease
 * and ends with it: when the job settles (ack, retry, dead letter, release) or when the
 * lease expires unheartbeated, so a crashed worker never keeps a repository's slot. A job
 * that finds its group full is not delivered and spends no attempt; it waits, and
 * `pending()` says which limit holds it.
 *
 * Aging: a waiting job rises one priority level (low → normal → high) per `agingMs`
 * waited since it was enqueued, and within a level the longest-waiting job goes first, so
 * a steady stream of high-priority jobs delays a low one by at most two steps.
 */
export interface ConcurrencyLimits {
  /** Most running jobs of one repository, across every worker; undefined: no limit. */
  perRepo?: number;
  /** Share (0, 1] of `perRepo` one requester may hold on one repository; needs `perRepo`. */
  perRequesterShare?: number;
}

/** Which limit keeps a waiting job from being claimed. */
export type HeldBy =
  /** Its repository already runs `max` jobs. */
  | { limit: 'repo'; repo: string; max: number }
  /** Its requester already runs `max` jobs on this repository. */
  | { limit: 'requester'; repo: string; requester: string; max: number };

/** A group a job needs a slot in: `key` names it in storage, `held` is what to say when it is full. */
export interface SlotGroup {
  key: string;
  max: number;
  held: HeldBy;
}

/** The groups `job` needs a slot in under `limits`; none when there is no limit. */
export function slotGroups(job: Pick<Job, 'repo' | 'requested_by'>, limits: ConcurrencyLimits = {}): SlotGroup[] {
  const { perRepo, perRequesterShare } = limits;
  if (perRepo === undefined) return [];
  const groups: SlotGroup[] = [
    { key: `repo:${job.repo}`, max: perRepo, held: { limit: 'repo', repo: job.repo, max: perRepo } },
  ];
  if (perRequesterShare !== undefined) {
    const max = requesterMax(perRepo, perRequesterShare);
    // JSON keeps "a:b" + "c" apart from "a" + "b:c" (chat requesters carry colons).
    groups.push({
      key: `requester:${JSON.stringify([job.repo, job.requested_by])}`,
      max,
      held: { limit: 'requester', repo: job.repo, requester: job.requested_by, max },
    });
  }
  return groups;
}

/** How many of a repository's `perRepo` slots one requester may hold. */
function requesterMax(perRepo: number, share: number): number {
  return Math.max(1, Math.floor(perRepo * share));
}

/** One line for a person: why a job waits. */
export function describeHold(held: HeldBy): string {
  return held.limit === 'repo'
    ? `waiting: ${held.repo} runs ${held.max} job(s), its per-repository limit`
    : `waiting: ${held.requester} runs ${held.max} job(s) on ${held.repo}, their share of its limit`;
}

/**
 * How long a job held back by a full group stays out of sight on BullMQ and SQS before a
 * claim looks at it again (the local queue reads its slots at every claim and needs none;
 * BullMQ brings a held job forward as soon as a slot of its group is freed).
 */
export const holdRecheckMs = 2_000;

/** Default of `agingMs`: one level per 5 minutes waited. */
export const defaultAgingMs = 300_000;

/** Priority levels as numbers, low to high. */
export const priorityLevel = { low: 0, normal: 1, high: 2 } as const;

/** A waiting job's level after aging: its own, plus one per `agingMs` waited, at most high. */
export function agedLevel(level: number, waitedMs: number, agingMs: number): number {
  return Math.min(priorityLevel.high, level + Math.floor(Math.max(0, waitedMs) / agingMs));
}
