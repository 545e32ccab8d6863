import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { HttpApiConfig } from '@codefleet/config';
import { CodefleetError, isTerminal } from '@codefleet/core';
import { createHttpApp, listen, type Listening } from '@codefleet/http-server';
import { maskForPublishing, type Logger, type SecretSource } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import type { Requester } from '@codefleet/requester';
import { latestRun, type RunStore } from '@codefleet/store';
import { ApiError, apiErrorHandler } from './api-errors.js';
import { bearerMatches } from './auth.js';
import { createJobHandler, type CreateBody } from './create-job.js';
import { openApiDocument } from './openapi.js';
import { createdJob, createJobBody, jobIdPattern, jobStatus, maxRequestBytes } from './schema.js';
import { stateOf, statusBody, type ApiJobRecord } from './status.js';
import { apiJobKey } from './request-keys.js';

export { apiJobTtlMs, idempotencyTtlMs } from './create-job.js';
export { maxRequestBytes };

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
  /**
   * The API as a Fastify plugin serving `/v1/…`; register it without a prefix on an app made
   * with `strictValidation` (an unknown field is a 400, never dropped), as `codefleet serve` does.
   */
  readonly routes: (scope: FastifyInstance) => Promise<void>;
  /** Listens on `config.host`:`config.port` (0 or unset: a free port); loopback unless configured otherwise. */
  listen(): Promise<void>;
  /** `http://host:port` once listening. */
  readonly url: string;
  close(): Promise<void>;
}

// Checked before the store is asked: a run-store key is bounded, an over-long id is the client's mistake.
const params = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: jobIdPattern } },
} as const;

/**
 * Fastify's own JSON parser (prototype-poisoning safe), except that an empty body is no body
 * (`POST …/cancel` with a JSON content type and nothing in it is a normal request); any other
 * content type is a 415 before the body is read, not a 400 about a string body.
 */
function acceptJsonOnly(scope: FastifyInstance): void {
  const json = scope.getDefaultJsonParser('error', 'error');
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser(
    'application/json',
    { parseAs: 'string', bodyLimit: maxRequestBytes },
    (req, body, done) => {
      if (body === '') return done(null, undefined);
      json(req, String(body), done);
    },
  );
}

/** `GET /v1/jobs/:id` and `POST /v1/jobs/:id/cancel`: a job's status, and asking it to stop. */
function jobRoutes(scope: FastifyInstance, options: HttpApiOptions, mask: (text: string) => string): void {
  const { store, log } = options;
  const readRecord = async (id: string): Promise<ApiJobRecord> => {
    const text = await store.lookupRequest(apiJobKey(id));
    if (text === undefined) throw new ApiError(404, 'not_found', `no job ${id}`);
    return JSON.parse(text) as ApiJobRecord;
  };
  scope.get<{ Params: { id: string } }>(
    '/v1/jobs/:id',
    { schema: { params, response: { 200: jobStatus } } },
    async (req) => {
      const record = await readRecord(req.params.id);
      const { run } = await latestRun(store, record.id);
      const cancel = await store.cancelRequested(record.idempotency_key);
      return statusBody(record, run, cancel !== undefined && (run === undefined || !isTerminal(run.stage)), mask);
    },
  );
  scope.post<{ Params: { id: string } }>('/v1/jobs/:id/cancel', { schema: { params } }, async (req, reply) => {
    const record = await readRecord(req.params.id);
    const { run } = await latestRun(store, record.id);
    if (run !== undefined && isTerminal(run.stage))
      throw new ApiError(409, 'already_finished', `job ${record.id} has already finished (${stateOf(run)})`);
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
}

/**
 * The HTTP job API on Fastify: `POST /v1/jobs`, `GET /v1/jobs/:id`, `POST /v1/jobs/:id/cancel`
 * behind a bearer token (checked before the body is read), and `GET /v1/openapi.json`.
 * A job is remembered under `api-job:<id>` at creation, so its status is known before any
 * worker wrote a run; an `Idempotency-Key` is bound to the job it created, atomically in the
 * run store, so a replay from any API process returns that job instead of making another.
 */
export function createHttpApi(options: HttpApiOptions): HttpApi {
  const { config, log } = options;
  const token = config.token;
  if (token === undefined || token === '') {
    throw new CodefleetError('invalid_config', `the HTTP API needs a bearer token (${config.token_env})`, {
      verdict: 'permanent',
    });
  }
  const mask = (text: string) => maskForPublishing(text, options.secrets);
  const createJob = createJobHandler({
    config,
    queue: options.queue,
    store: options.store,
    requester: options.requester,
    log,
    newId: options.newId ?? (() => `api-${randomUUID()}`),
    now: options.now ?? (() => new Date()),
  });
  let server: Listening | undefined;

  const routes = async (scope: FastifyInstance): Promise<void> => {
    acceptJsonOnly(scope);
    scope.addHook('onRequest', async (req: FastifyRequest) => {
      if (!req.url.startsWith('/v1/jobs')) return;
      if (!bearerMatches(req.headers.authorization, token))
        throw new ApiError(401, 'unauthorized', 'missing or wrong bearer token');
    });
    scope.addHook('onResponse', async (req, reply) => {
      const path = req.routeOptions.url ?? req.url.slice(0, 200);
      log.info({ event: 'api.request', method: req.method, path, status: reply.statusCode }, 'api request');
    });
    scope.setErrorHandler(apiErrorHandler(log));
    scope.get('/v1/openapi.json', async () => openApiDocument());
    scope.post<{ Body: CreateBody; Headers: { 'idempotency-key'?: string } }>(
      '/v1/jobs',
      { schema: { body: createJobBody, response: { 200: createdJob, 201: createdJob } } },
      createJob,
    );
    jobRoutes(scope, options, mask);
  };

  return {
    routes,
    get url() {
      return server?.url ?? '';
    },
    async listen() {
      const app = createHttpApp({ strictValidation: true });
      await app.register(routes);
      server = await listen(app, { port: config.port ?? 0, host: config.host });
    },
    async close() {
      await server?.close();
    },
  };
}
