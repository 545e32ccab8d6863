import { isTerminal, type RunRecord } from '@codefleet/core';
import type { jobStates } from './schema.js';

/** What the API keeps of a job it created (`api-job:<id>`): enough to answer status and cancel. */
export interface ApiJobRecord {
  id: string;
  /** The task key cancels are recorded under. */
  idempotency_key: string;
  repo: string;
  mode: 'change' | 'answer';
  created_at: string;
  /** SHA-256 of the request body, to tell a replay from a reused Idempotency-Key. */
  request_sha256: string;
}

/** A state of {@link jobStates}. */
export type JobState = (typeof jobStates)[number];

/** The state of a job from its latest run; no run yet is `queued`. */
export function stateOf(run: RunRecord | undefined): JobState {
  if (run === undefined) return 'queued';
  if (!isTerminal(run.stage)) return run.stage === 'queued' ? 'queued' : 'running';
  if (run.outcome === 'cancelled' || run.stage === 'cancelled') return 'cancelled';
  return run.outcome === 'succeeded' ? 'succeeded' : 'failed';
}

/** Links of a job, relative to the API's base URL. */
export function linksOf(id: string): { self: string; cancel: string } {
  const path = `/v1/jobs/${encodeURIComponent(id)}`;
  return { self: path, cancel: `${path}/cancel` };
}

/** The `GET /v1/jobs/:id` body. */
export function statusBody(
  record: ApiJobRecord,
  run: RunRecord | undefined,
  cancelRequested: boolean,
  mask: (text: string) => string,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    id: record.id,
    status: stateOf(run),
    repo: record.repo,
    mode: record.mode,
    attempts: run?.attempts.length ?? 0,
    created_at: record.created_at,
    links: linksOf(record.id),
  };
  if (cancelRequested) body.cancel_requested = true;
  if (run === undefined) return body;
  body.stage = run.stage;
  body.updated_at = run.updated_at;
  if (run.outcome !== undefined) body.outcome = run.outcome;
  if (run.pull_request !== undefined) {
    const { number, url, draft } = run.pull_request;
    body.pull_request = { number, draft, ...(url === undefined ? {} : { url }) };
  }
  if (run.error !== undefined) body.error = { code: run.error.code, message: mask(run.error.message) };
  if (run.answer !== undefined) body.answer = mask(run.answer);
  return body;
}
