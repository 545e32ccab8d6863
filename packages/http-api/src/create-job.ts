import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HttpApiConfig } from '@codefleet/config';
import { classify, createJob, InvalidJobError, type Job } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import { reportSafely, type Requester } from '@codefleet/requester';
import { latestRun, type RunStore } from '@codefleet/store';
import { ApiError } from './api-errors.js';
import { callbackUrlProblem } from './callback-url.js';
import { idempotencyKeyPattern } from './schema.js';
import { linksOf, stateOf, type ApiJobRecord } from './status.js';
import { apiJobKey, idempotencyKey } from './request-keys.js';

/** How long an Idempotency-Key finds its job. */
export const idempotencyTtlMs = 24 * 60 * 60 * 1000;
/** How long `GET /v1/jobs/:id` knows a job. */
export const apiJobTtlMs = 30 * 24 * 60 * 60 * 1000;

/** The body of `POST /v1/jobs`, as its schema lets it through. */
export type CreateBody = {
  repo: string;
  title: string;
  body?: string;
  base_branch?: string;
  base_commit?: string;
  patch?: string;
  hidden_tests?: { patch: string; tests?: string[] };
  agent?: string;
  dod?: (string | string[])[];
  priority?: 'low' | 'normal' | 'high';
  type?: 'feature' | 'bug' | 'refactor';
  mode?: 'change' | 'answer';
  callback_url?: string;
};

/** What {@link createJobHandler} needs. */
export interface CreateJobDeps {
  config: HttpApiConfig;
  queue: Pick<Queue, 'enqueue'>;
  store: Pick<RunStore, 'get' | 'bindRequest' | 'setRequest' | 'releaseRequest' | 'lookupRequest'>;
  requester: Requester;
  log: Logger;
  newId: () => string;
  now: () => Date;
}

/** The JSON of a value with its object keys sorted, so equal bodies hash equally. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The job a request asks for (its id drawn once the request passed its checks), or the ApiError that says what is wrong. */
function jobOf(deps: CreateJobDeps, input: CreateBody, key: string | undefined): Job {
  if (key !== undefined && !new RegExp(idempotencyKeyPattern).test(key)) {
    throw new ApiError(
      400,
      'invalid_request',
      'Idempotency-Key: expected 1..255 visible ASCII characters',
      'Idempotency-Key',
    );
  }
  if (input.callback_url !== undefined) {
    const problem = callbackUrlProblem(input.callback_url, deps.config.callback_hosts);
    if (problem !== undefined) throw new ApiError(422, 'callback_not_allowed', problem, 'callback_url');
  }
  const id = deps.newId();
  try {
    const { callback_url: callbackUrl, ...rest } = input;
    return createJob(
      {
        ...rest,
        source: {
          kind: 'api',
          request_id: key ?? id,
          ...(callbackUrl === undefined ? {} : { callback_url: callbackUrl }),
        },
        requested_by: 'api',
      },
      { id, now: deps.now() },
    );
  } catch (error) {
    if (error instanceof InvalidJobError) {
      const issue = error.issues[0];
      throw new ApiError(
        400,
        'invalid_request',
        issue === undefined ? error.message : `${issue.path}: ${issue.message}`,
        issue?.path,
      );
    }
    throw error;
  }
}

/**
 * Binds `key` to the job about to be created, atomically in the run store. Resolves to
 * false when this request holds the key (create the job); else it answered the replay with
 * the existing job as it stands now (true), or throws the refusal. Not the reply itself:
 * a Fastify reply is thenable, so awaiting it would not hand it back.
 */
async function bindKey(
  deps: CreateJobDeps,
  key: string,
  id: string,
  hash: string,
  reply: FastifyReply,
): Promise<boolean> {
  const { store, log } = deps;
  const bound = await store.bindRequest(
    idempotencyKey(key),
    JSON.stringify({ job_id: id, request_sha256: hash }),
    idempotencyTtlMs,
  );
  if (bound.bound) return false;
  const first = JSON.parse(bound.value) as { job_id: string; request_sha256: string };
  if (first.request_sha256 !== hash)
    throw new ApiError(422, 'idempotency_key_reused', 'this Idempotency-Key was used with another request body');
  if ((await store.lookupRequest(apiJobKey(first.job_id))) === undefined) {
    reply.header('retry-after', '1');
    throw new ApiError(409, 'conflict', 'the request with this Idempotency-Key is still being created; retry');
  }
  log.info({ event: 'api.replayed', job_id: first.job_id }, 'Idempotency-Key replayed: the existing job returned');
  // Where the job stands now: a client retrying after a lost answer may find it finished.
  const { run } = await latestRun(store, first.job_id);
  reply
    .code(200)
    .header('idempotent-replayed', 'true')
    .send({ id: first.job_id, status: stateOf(run), links: linksOf(first.job_id) });
  return true;
}

/**
 * `POST /v1/jobs`: a job is remembered under `api-job:<id>` at creation, so its status is
 * known before any worker wrote a run; an `Idempotency-Key` is bound to the job it created,
 * so a replay from any API process returns that job instead of making another.
 */
export function createJobHandler(deps: CreateJobDeps) {
  const { store, queue, log } = deps;
  return async (
    req: FastifyRequest<{ Body: CreateBody; Headers: { 'idempotency-key'?: string } }>,
    reply: FastifyReply,
  ) => {
    const input = req.body;
    const key = req.headers['idempotency-key'];
    const job = jobOf(deps, input, key);
    const { id } = job;
    const hash = createHash('sha256').update(canonical(input)).digest('hex');
    if (key !== undefined && (await bindKey(deps, key, id, hash, reply))) return reply;
    const record: ApiJobRecord = {
      id,
      idempotency_key: job.idempotency_key,
      repo: job.repo,
      mode: job.mode,
      created_at: job.created_at,
      request_sha256: hash,
    };
    try {
      await store.setRequest(apiJobKey(id), JSON.stringify(record), apiJobTtlMs);
      await queue.enqueue(job);
    } catch (error) {
      // Free the key again, so the client's retry with it creates the job instead of finding one that never ran.
      if (key !== undefined) await store.releaseRequest(idempotencyKey(key)).catch(() => {});
      const c = classify(error);
      log.error({ err: error, event: 'api.enqueue_failed', code: c.code }, 'could not queue the job');
      throw new ApiError(c.verdict === 'permanent' ? 422 : 503, c.code, `could not queue the job: ${c.message}`);
    }
    log.info({ event: 'api.queued', job_id: id, repo: job.repo }, 'job queued through the HTTP API');
    await reportSafely(deps.requester, { kind: 'queued', job }, log);
    return reply.code(201).send({ id, status: 'queued' as const, links: linksOf(id) });
  };
}
