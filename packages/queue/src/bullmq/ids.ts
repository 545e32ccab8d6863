import type { Job } from '@codefleet/core';

/**
 * The BullMQ id of a job. BullMQ refuses custom ids that contain `:` or look like
 * integers, and codefleet ids may do both, so `:` becomes `~` (never in a codefleet id)
 * and a prefix keeps it from being a number. Never decoded: the payload carries the id.
 */
export function bullJobId(id: string): string {
  return `cf~${id.replaceAll(':', '~')}`;
}

/** The BullMQ id of a redriven job: a new job, so it gets a fresh attempt budget. */
export function redriveJobId(id: string, now: number): string {
  return `${bullJobId(id)}~r${now.toString(36)}`;
}

/** BullMQ priorities: lower runs first; 0 would bypass the priority set altogether. */
export function priorityOf(priority: Job['priority']): number {
  return priority === 'high' ? 1 : priority === 'low' ? 3 : 2;
}

// BullMQ's negative script results: the job or its lock is gone, or it moved on.
const lockLostCodes = new Set([-1, -2, -3, -6]);

/** True when BullMQ refused a move because this claim no longer owns the job. */
export function isLockLost(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' && lockLostCodes.has(code);
}
