import type { Job } from '@codefleet/core';
import type { RunStore } from '@codefleet/store';
import { jobMetaKey } from './request-keys.js';

/**
 * What a chat job leaves in the request keys when it is queued: enough for OPS to find a job
 * no worker has claimed yet (no run record), for a thread to know its repository, and for a
 * redelivered message to be answered without being routed again.
 */
export type JobMeta = Pick<Job, 'id' | 'repo' | 'requested_by' | 'source' | 'idempotency_key'> & {
  route?: Job['route'];
};

/** The {@link JobMeta} of `jobId`, when it was recorded and is readable. */
export async function readJobMeta(store: Pick<RunStore, 'lookupRequest'>, jobId: string): Promise<JobMeta | undefined> {
  const text = await store.lookupRequest(jobMetaKey(jobId));
  if (text === undefined) return undefined;
  try {
    const meta = JSON.parse(text) as Partial<JobMeta> | null;
    return typeof meta?.repo === 'string' &&
      typeof meta.idempotency_key === 'string' &&
      typeof meta.requested_by === 'string' &&
      typeof meta.source === 'object'
      ? (meta as JobMeta)
      : undefined;
  } catch {
    return undefined;
  }
}
