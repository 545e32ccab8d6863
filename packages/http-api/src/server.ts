import { createHash, randomUUID } from 'node:crypto';
import Fastify, { type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
import type { HttpApiConfig } from '@codefleet/config';
import { classify, CodefleetError, createJob, InvalidJobError, isTerminal, type Job } from '@codefleet/core';
import { maskForPublishing, type Logger, type SecretSource } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import { reportSafely, type Requester } from '@codefleet/requester';
import { latestRun, type RunStore } from '@codefleet/store';
import { bearerMatches } from './auth.js';
import { callbackUrlProblem } from './callback-url.js';
import { openApiDocument } from './openapi.js';
import {
  createdJob,
  createJobBody,
  idempotencyKeyPattern,
  jobIdPattern,
  jobStatus,
  maxRequestBytes,
} from './schema.js';
import { linksOf, stateOf, statusBody, type ApiJobRecord } from './status.js';

export { maxRequestBytes };

/** How long an Idempotency-Key finds its job. */
export const idempotencyTtlMs = 24 * 60 * 60 * 1000;
/** How long `GET /v1/jobs/:id` knows a job. */
export const apiJobTtlMs = 30 * 24 * 60 * 60 * 1000;

/** Dependencies of {@link createHttpApi}. */
export interface HttpApiOptions {
  /** `http_api:`; `token` must be set. */
  config: HttpApiConfig;
  queue: Pick<Queue, 'enqueue'>;
  /** With `record`, a cancel is written to the journal (via 'api'). */
  store: Pick<
    RunStore,
    'get' | 'bindRequest' | 'setRequest' | 'releaseRequest' | 'lookupRequest' | 'requestCancel' | 'cancelRequested'
  > &
    Partial<Pick<RunStore, 'record'>>;
  /** Told `queued` for every new job (the callback requester, usually through requesterFor). */
  requester: Requester;
  log: Logger;
  secrets?: SecretSource;
  newId?: () => string;
  now?: () => Date;
}

/** A running (or ready) HTTP API. */
export interface HttpApi {
  /** Listens on `config.host`:`config.port` (0: a free port); loopback unless configured otherwise. */
  listen(): Promise<void>;
  /** `http://host:port` once listening. */
  readonly url: string;
  close(): Promise<void>;
}

type CreateBody = {
  repo: string;
  title: string;
  body?: string;
  base_branch?: string;
  agent?: string;
  dod?: (string | string[])[];
  priority?: 'low' | 'normal' | 'high';
  type?: 'feature' | 'bug' | 'refactor';
  mode?: 'change' | 'answer';
  callback_url?: string;
};

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** Fastify's own refusals, answered with the API's stable codes (and described in the OpenAPI document). */
const fastifyErrors = new Map<string | undefined, { status: number; error: string; message: string }>([
  [
    'FST_ERR_CTP_INVALID_MEDIA_TYPE',
    { status: 415, error: 'unsupported_media_type', message: 'send the body as application/json' },
  ],
  [
    'FST_ERR_CTP_BODY_TOO_LARGE',
    { status: 413, error: 'too_large', message: `the body is larger than ${maxRequestBytes} bytes` },
  ],
]);

/** The JSON of a value with its object keys sorted, so equal bodies hash equally. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The field an ajv error is about: `title`, `dod.0`, or the missing or unknown property. */
function fieldOf(error: { instancePath: string; params: Record<string, unknown> }): string {
  const path = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const extra = error.params.missingProperty ?? error.params.additionalProperty;
  return typeof extra === 'string' ? (path === '' ? extra : `${path}.${extra}`) : path || '(body)';
}

/**
 * The HTTP job API on Fastify: `POST /v1/jobs`, `GET /v1/jobs/:id`, `POST /v1/jobs/:id/cancel`
 * behind a bearer token (checked before the body is read), and `GET /v1/openapi.json`.
 * A job is remembered under `api-job:<id>` at creation, so its status is known before any
 * worker wrote a run; an `Idempotency-Key` is bound to the job it created, atomically in the
 * run store, so a replay from any API process returns that job instead of making another.
 */
export function createHttpApi(options: HttpApiOptions): HttpApi {
  const { config, queue, store, requester, log } = options;
  const token = config.token;
  if (token === undefined || token === '') {
    throw new CodefleetError('invalid_config', `the HTTP API needs a bearer token (${config.token_env})`, {
      verdict: 'permanent',
    });
  }
  const newId = options.newId ?? (() => `api-${randomUUID()}`);
  const now = options.now ?? (() => new Date());
  const mask = (text: string) => maskForPublishing(text, options.secrets);
  const app = Fastify({
    logger: false,
    bodyLimit: maxRequestBytes,
    // Job ids run to 128 characters; Fastify's default of 100 would turn the longest into a 414.
    // Under routerOptions: the top-level option is deprecated and warns on every start.
    routerOptions: { maxParamLength: 200 },
    // Strict validation: an unknown field or a number for a string is a 400, never coerced or dropped.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } },
  });
  let url = '';
  // Fastify's own JSON parser (prototype-poisoning safe), except that an empty body is no
  // body: `POST …/cancel` with a JSON content type and nothing in it is a normal request.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '') return done(null, undefined);
    json(req, String(body), done);
  });
  // Fastify reads text/plain bodies as strings too; the API takes JSON only, so any other
  // content type is a 415 before the body is read, not a 400 about a string body.
  app.removeContentTypeParser('text/plain');

  app.addHook('onRequest', async (req: FastifyRequest) => {
    if (!req.url.startsWith('/v1/jobs')) return;
    if (!bearerMatches(req.headers.authorization, token))
      throw new ApiError(401, 'unauthorized', 'missing or wrong bearer token');
  });
  app.addHook('onResponse', async (req, reply) => {
    log.info(
      {
        event: 'api.request',
        method: req.method,
        path: req.routeOptions.url ?? req.url.slice(0, 200),
        status: reply.statusCode,
      },
      'api request',
    );
  });

  app.setErrorHandler((error: FastifyError | ApiError, _req: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof ApiError) {
      if (error.status === 401)
        log.warn({ event: 'api.unauthorized' }, 'request with a missing or wrong bearer token refused');
      return reply.code(error.status).send({
        error: error.code,
        message: error.message,
        ...(error.field === undefined ? {} : { field: error.field }),
      });
    }
    const first = error.validation?.[0];
    if (first !== undefined) {
      const field = fieldOf(first as { instancePath: string; params: Record<string, unknown> });
      return reply
        .code(400)
        .send({ error: 'invalid_request', field, message: `${field}: ${first.message ?? 'invalid'}` });
    }
    const status = error.statusCode ?? 500;
    const known = fastifyErrors.get(error.code);
    if (known !== undefined) return reply.code(known.status).send({ error: known.error, message: known.message });
    if (
      status === 400 &&
      (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || /JSON/i.test(error.message))
    ) {
      return reply.code(400).send({ error: 'invalid_json', message: 'the body is not valid JSON' });
    }
    if (status >= 400 && status < 500)
      return reply.code(status).send({ error: error.code ?? 'bad_request', message: error.message });
    log.error({ err: error, event: 'api.failed' }, 'API request failed');
    return reply.code(500).send({ error: 'internal', message: 'internal error' });
  });

  const readRecord = async (id: string): Promise<ApiJobRecord> => {
    const text = await store.lookupRequest(`api-job:${id}`);
    if (text === undefined) throw new ApiError(404, 'not_found', `no job ${id}`);
    return JSON.parse(text) as ApiJobRecord;
  };

  app.get('/v1/openapi.json', async () => openApiDocument());

  app.post<{ Body: CreateBody; Headers: { 'idempotency-key'?: string } }>(
    '/v1/jobs',
    {
      schema: { body: createJobBody, response: { 200: createdJob, 201: createdJob } },
    },
    async (req, reply) => {
      const input = req.body;
      const key = req.headers['idempotency-key'];
      if (key !== undefined && !new RegExp(idempotencyKeyPattern).test(key)) {
        throw new ApiError(
          400,
          'invalid_request',
          'Idempotency-Key: expected 1..255 visible ASCII characters',
          'Idempotency-Key',
        );
      }
      if (input.callback_url !== undefined) {
        const problem = callbackUrlProblem(input.callback_url, config.callback_hosts);
        if (problem !== undefined) throw new ApiError(422, 'callback_not_allowed', problem, 'callback_url');
      }
      const id = newId();
      let job: Job;
      try {
        const { callback_url: callbackUrl, ...rest } = input;
        job = createJob(
          {
            ...rest,
            source: {
              kind: 'api',
              request_id: key ?? id,
              ...(callbackUrl === undefined ? {} : { callback_url: callbackUrl }),
            },
            requested_by: 'api',
          },
          { id, now: now() },
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
      const hash = createHash('sha256').update(canonical(input)).digest('hex');
      const created = { id, status: 'queued' as const, links: linksOf(id) };

      if (key !== undefined) {
        const bound = await store.bindRequest(
          `api:${key}`,
          JSON.stringify({ job_id: id, request_sha256: hash }),
          idempotencyTtlMs,
        );
        if (!bound.bound) {
          const first = JSON.parse(bound.value) as { job_id: string; request_sha256: string };
          if (first.request_sha256 !== hash)
            throw new ApiError(
              422,
              'idempotency_key_reused',
              'this Idempotency-Key was used with another request body',
            );
          if ((await store.lookupRequest(`api-job:${first.job_id}`)) === undefined) {
            reply.header('retry-after', '1');
            throw new ApiError(409, 'conflict', 'the request with this Idempotency-Key is still being created; retry');
          }
          log.info(
            { event: 'api.replayed', job_id: first.job_id },
            'Idempotency-Key replayed: the existing job returned',
          );
          // Where the job stands now: a client retrying after a lost answer may find it finished.
          const { run } = await latestRun(store, first.job_id);
          return reply
            .code(200)
            .header('idempotent-replayed', 'true')
            .send({ id: first.job_id, status: stateOf(run), links: linksOf(first.job_id) });
        }
      }
      const record: ApiJobRecord = {
        id,
        idempotency_key: job.idempotency_key,
        repo: job.repo,
        mode: job.mode,
        created_at: job.created_at,
        request_sha256: hash,
      };
      try {
        await store.setRequest(`api-job:${id}`, JSON.stringify(record), apiJobTtlMs);
        await queue.enqueue(job);
      } catch (error) {
        // Free the key again, so the client's retry with it creates the job instead of finding one that never ran.
        if (key !== undefined) await store.releaseRequest(`api:${key}`).catch(() => {});
        const c = classify(error);
        log.error({ err: error, event: 'api.enqueue_failed', code: c.code }, 'could not queue the job');
        throw new ApiError(c.verdict === 'permanent' ? 422 : 503, c.code, `could not queue the job: ${c.message}`);
      }
      log.info({ event: 'api.queued', job_id: id, repo: job.repo }, 'job queued through the HTTP API');
      await reportSafely(requester, { kind: 'queued', job }, log);
      return reply.code(201).send(created);
    },
  );

  // Checked before the store is asked: a run-store key is bounded, an over-long id is the client's mistake.
  const params = {
    type: 'object',
    required: ['id'],
    properties: { id: { type: 'string', pattern: jobIdPattern } },
  } as const;

  app.get<{ Params: { id: string } }>(
    '/v1/jobs/:id',
    { schema: { params, response: { 200: jobStatus } } },
    async (req) => {
      const record = await readRecord(req.params.id);
      const { run } = await latestRun(store, record.id);
      const cancel = await store.cancelRequested(record.idempotency_key);
      return statusBody(record, run, cancel !== undefined && (run === undefined || !isTerminal(run.stage)), mask);
    },
  );

  app.post<{ Params: { id: string } }>('/v1/jobs/:id/cancel', { schema: { params } }, async (req, reply) => {
    const record = await readRecord(req.params.id);
    const { run } = await latestRun(store, record.id);
    if (run !== undefined && isTerminal(run.stage)) {
      throw new ApiError(409, 'already_finished', `job ${record.id} has already finished (${stateOf(run)})`);
    }
    await store.requestCancel(record.idempotency_key, 'api');
    await store
      .record?.({
        kind: 'action',
        action: 'cancel',
        ...(run === undefined ? {} : { runId: run.run_id }),
        jobId: record.id,
        taskKey: record.idempotency_key,
        by: 'api',
        via: 'api',
        at: new Date().toISOString(),
      })
      .catch((err: unknown) =>
        log.warn(
          { err, event: 'journal.record_failed', job_id: record.id },
          'could not write the cancel to the journal',
        ),
      );
    log.info({ event: 'api.cancel_requested', job_id: record.id }, 'cancel requested through the HTTP API');
    return reply.code(202).send(statusBody(record, run, true, mask));
  });

  return {
    get url() {
      return url;
    },
    async listen() {
      const address = await app.listen({ port: config.port, host: config.host });
      url = address;
    },
    async close() {
      await app.close();
    },
  };
}
