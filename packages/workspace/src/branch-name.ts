import { createHash } from 'node:crypto';
import { defaultIdempotencyKey, type Job } from '@codefleet/core';

/** Longest title slug in a branch name; keeps names readable in forge UIs. */
export const maxSlugChars = 40;

/**
 * The work branch of a job. Deterministic and free of attempt numbers, so a retry or a
 * redelivery of the same request converges on the same branch (and the same PR):
 * - issue: `ai/issue-<N>`;
 * - otherwise `ai/<title slug, ≤ 40 chars>-<8 hex chars>`, where the hex is a hash of the
 *   request's stable identity: a chat thread/message for chat jobs (a redelivery gets a
 *   new job id but the same thread), the job id for CLI and API jobs.
 *
 * The result is always a valid git branch name: the slug is `[a-z0-9-]` only. A job that
 * names its `branch` (a follow-up in a chat thread) continues that branch.
 */
export function branchName(job: Pick<Job, 'id' | 'title' | 'source' | 'branch'>): string {
  if (job.branch !== undefined) return job.branch;
  if (job.source.kind === 'issue') return `ai/issue-${job.source.number}`;
  // The repo is left out of the key: a branch lives inside one repository anyway.
  const identity = defaultIdempotencyKey('', job.source, job.id);
  const shortId = createHash('sha256').update(identity).digest('hex').slice(0, 8);
  return `ai/${slugify(job.title)}-${shortId}`;
}

/** Lower-case ASCII words joined by `-`, at most {@link maxSlugChars}; `task` when nothing is left. */
export function slugify(title: string): string {
  const slug = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '') // accents split off by NFKD: "é" → "e"
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, maxSlugChars)
    .replace(/-+$/, '');
  return slug === '' ? 'task' : slug;
}
