import { maxBodyChars, maxDodCommands, maxRepoLength } from '@codefleet/core';

// JSON Schemas of the API, used twice: Fastify validates requests with them, and the OpenAPI
// description is built from the same objects, so the two cannot drift apart. Fine-grained
// checks (a repository reference, a branch name, a DoD command line) are the job model's and
// happen in createJob, which names the field as well.

/** The body of `POST /v1/jobs`. */
export const createJobBody = {
  type: 'object',
  additionalProperties: false,
  required: ['repo', 'title'],
  properties: {
    repo: { type: 'string', minLength: 1, maxLength: maxRepoLength, description: 'GitHub owner/name, or a repository the worker can reach (absolute path, git URL).' },
    title: { type: 'string', minLength: 1, maxLength: 256, description: 'One-line task title.' },
    body: { type: 'string', maxLength: maxBodyChars, description: 'Task description, snapshotted into the job.' },
    base_branch: { type: 'string', minLength: 1, maxLength: 255, description: 'Branch to start from; default the repository default branch.' },
    agent: { type: 'string', pattern: '^[a-z0-9_-]{1,64}$', description: 'Configured agent or profile; default agents.default.' },
    dod: {
      type: 'array',
      maxItems: maxDodCommands,
      description: 'Definition-of-done commands: argv arrays, or strings split like a shell would (never run by one).',
      items: { anyOf: [{ type: 'string', minLength: 1, maxLength: 4096 }, { type: 'array', minItems: 1, maxItems: 256, items: { type: 'string', maxLength: 4096 } }] },
    },
    priority: { type: 'string', enum: ['low', 'normal', 'high'] },
    type: { type: 'string', enum: ['feature', 'bug', 'refactor'] },
    mode: { type: 'string', enum: ['change', 'answer'], description: 'change: open a pull request; answer: read-only, the answer is reported.' },
    callback_url: {
      type: 'string',
      minLength: 1,
      maxLength: 2048,
      description: 'Completion webhook: https (http only on loopback), host in http_api.callback_hosts.',
    },
  },
} as const;

const links = {
  type: 'object',
  required: ['self', 'cancel'],
  properties: { self: { type: 'string' }, cancel: { type: 'string' } },
} as const;

/** Where a job stands, as the API reports it. */
export const jobStates = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;

/** The answer of `POST /v1/jobs` (201, or 200 for a replayed Idempotency-Key). */
export const createdJob = {
  type: 'object',
  required: ['id', 'status', 'links'],
  properties: { id: { type: 'string' }, status: { type: 'string', enum: jobStates }, links },
} as const;

/** The answer of `GET /v1/jobs/:id`. */
export const jobStatus = {
  type: 'object',
  required: ['id', 'status', 'repo', 'attempts', 'links'],
  properties: {
    id: { type: 'string' },
    status: { type: 'string', enum: jobStates },
    repo: { type: 'string' },
    mode: { type: 'string', enum: ['change', 'answer'] },
    stage: { type: 'string', description: 'The run\'s stage (preparing … publishing, done, failed, cancelled).' },
    outcome: { type: 'string', description: 'succeeded, failed, cancelled, no_changes or dod_failed, once finished.' },
    attempts: { type: 'integer', minimum: 0 },
    pull_request: {
      type: 'object',
      required: ['number', 'draft'],
      properties: { number: { type: 'integer' }, url: { type: 'string' }, draft: { type: 'boolean' } },
    },
    error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
    answer: { type: 'string', description: 'An answer-mode job\'s answer.' },
    cancel_requested: { type: 'boolean' },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
    links,
  },
} as const;

/** Every error answer. */
export const errorBody = {
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: { type: 'string', description: 'A stable code: unauthorized, invalid_request, invalid_json, not_found, conflict, …' },
    message: { type: 'string' },
    field: { type: 'string', description: 'The request field at fault, for invalid_request.' },
  },
} as const;

const jobId = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' } } as const;
const error = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

/** The OpenAPI 3.1 description served at `GET /v1/openapi.json` and committed as docs/openapi.json. */
export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'codefleet HTTP API',
      version: '1.0.0',
      description:
        'Queue coding jobs, read their status, cancel them. Completion webhooks are POSTed to a job\'s callback_url, ' +
        'signed: X-Codefleet-Signature = sha256=<hex HMAC-SHA256 of "<X-Codefleet-Timestamp>.<raw body>"> keyed with ' +
        'the callback secret; dedupe on X-Codefleet-Event-Id.',
    },
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'http_api.token' } },
      schemas: { CreateJob: createJobBody, CreatedJob: createdJob, JobStatus: jobStatus, Error: errorBody },
    },
    paths: {
      '/v1/jobs': {
        post: {
          operationId: 'createJob',
          summary: 'Queue a job',
          parameters: [{
            name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 },
            description: 'Replays with the same key within 24 h return the job created first (200); the same key with another body is 422.',
          }],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/CreateJob' } } } },
          responses: {
            201: { description: 'Queued', content: { 'application/json': { schema: { $ref: '#/components/schemas/CreatedJob' } } } },
            200: { description: 'The job of a replayed Idempotency-Key', content: { 'application/json': { schema: { $ref: '#/components/schemas/CreatedJob' } } } },
            400: error('Invalid JSON or an invalid field (named in `field`)'),
            401: error('Missing or wrong bearer token'),
            409: error('A request with this Idempotency-Key is still being created; retry'),
            422: error('Idempotency-Key reused with another body, or a callback_url that is not allowed'),
            503: error('The queue could not take the job; retry with the same Idempotency-Key'),
          },
        },
      },
      '/v1/jobs/{id}': {
        get: {
          operationId: 'getJob',
          summary: 'Status and run summary of a job',
          parameters: [jobId],
          responses: {
            200: { description: 'The job', content: { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } } },
            401: error('Missing or wrong bearer token'),
            404: error('No such job (or not created through this API)'),
          },
        },
      },
      '/v1/jobs/{id}/cancel': {
        post: {
          operationId: 'cancelJob',
          summary: 'Ask a queued or running job to stop',
          parameters: [jobId],
          responses: {
            202: { description: 'Cancel requested; the worker stops at its next stage or heartbeat', content: { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } } },
            401: error('Missing or wrong bearer token'),
            404: error('No such job'),
            409: error('The job has already finished'),
          },
        },
      },
      '/v1/openapi.json': {
        get: { operationId: 'openApi', summary: 'This description', security: [], responses: { 200: { description: 'OpenAPI 3.1' } } },
      },
    },
  };
}
