import type { Job } from '@codefleet/core';
import type { HeldBy } from '../concurrency.js';
import type { PendingJob } from '../port.js';
import type { Coordination } from './coordination.js';

const priorities = new Set<string>(['low', 'normal', 'high']);

/**
 * Pending jobs as the coordination store knows them (SQS cannot list its messages): the
 * `queued` set by enqueue time, each with the repository, requester and priority kept at
 * enqueue and the limit that last held it back. A job enqueued before these were kept, or
 * a member its message outlived, is left out.
 */
export async function sqsPending(coord: Coordination, limit: number): Promise<PendingJob[]> {
  if (limit <= 0) return [];
  const waiting = await coord.waiting(limit);
  const pending: PendingJob[] = [];
  for (const { id, queuedAt, record } of waiting) {
    if (record.state !== 'pending' || !record.repo || !record.requestedBy) continue;
    const priority = priorities.has(record.priority ?? '') ? (record.priority as Job['priority']) : 'normal';
    pending.push({
      id,
      repo: record.repo,
      requestedBy: record.requestedBy,
      priority,
      ...(record.title ? { title: record.title } : {}),
      enqueuedAt: queuedAt,
      ...(record.held ? { heldBy: JSON.parse(record.held) as HeldBy } : {}),
    });
  }
  return pending;
}
