import {
  callbackBody,
  createdJob,
  createJobBody,
  errorBody,
  idempotencyKeyPattern,
  jobIdPattern,
  jobStatus,
  maxRequestBytes,
} from './schema.js';

// The OpenAPI 3.1 description, built from the schemas the server validates with. Every
// status the server can answer is listed (a test checks each answer of the API's tests
// against it), Fastify's own refusals (413, 415, a malformed id) included.

const json = (schema: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } });
const error = (description: string) => ({ description, content: json('Error') });
const jobId = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: jobIdPattern } } as const;

/** Answers every `/v1/jobs` operation can give. */
const common = {
  401: error('Missing or wrong bearer token (checked before the body is read)'),
  500: error('Internal error (the run store failed); the server log has the details'),
};

/** Answers of the two operations on one job. */
const onJob = {
  ...common,
  400: error('Malformed job id (`field`: id): not 1..128 of A-Z a-z 0-9 . _ : -'),
  404: error('No such job (or not created through this API)'),
};

const callbackExample = {
  event: 'finished',
  job_id: 'api-5f0c6d1e-8a4b-4c43-9d55-2b7f1e0a9c11',
  state: 'done',
  pr_url: 'https://github.com/acme/widgets/pull/42',
  message: 'Done: opened https://github.com/acme/widgets/pull/42',
};

/** The completion webhook, as an OpenAPI callback of `createJob`. */
const completionCallback = {
  '{$request.body#/callback_url}': {
    post: {
      summary: 'Completion webhook: one POST per event of the job',
      description:
        'Sent for queued, started, finished, answered, failed and cancelled. Verify X-Codefleet-Signature = ' +
        'sha256=<hex HMAC-SHA256 of "<X-Codefleet-Timestamp>.<raw body>"> keyed with http_api.callback_secret, refuse ' +
        'old timestamps, and dedupe on X-Codefleet-Event-Id. Network errors, 429 and 5xx are retried with backoff; ' +
        'redirects are not followed.',
      parameters: [
        {
          name: 'X-Codefleet-Signature',
          in: 'header',
          required: true,
          schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
        },
        {
          name: 'X-Codefleet-Timestamp',
          in: 'header',
          required: true,
          schema: { type: 'string', pattern: '^[0-9]+$' },
          description: 'Seconds since the epoch',
        },
        {
          name: 'X-Codefleet-Event-Id',
          in: 'header',
          required: true,
          schema: { type: 'string' },
          description: '`<job_id>:<event>`',
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: { $ref: '#/components/schemas/CallbackPayload' }, example: callbackExample },
        },
      },
      responses: {
        '2XX': { description: 'Received' },
        '429': { description: 'Retried later' },
        '5XX': { description: 'Retried later' },
      },
    },
  },
};

const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', pattern: idempotencyKeyPattern },
  description:
    '1..255 visible ASCII characters (0x21-0x7E: no spaces), else 400 with field Idempotency-Key. A replay with the ' +
    'same key and body within 24 h returns the job created first (200) with its current status; the same key with ' +
    'another body is 422.',
};

const createJob = {
  operationId: 'createJob',
  summary: 'Queue a job',
  parameters: [idempotencyKey],
  requestBody: { required: true, content: json('CreateJob') },
  callbacks: { completion: completionCallback },
  responses: {
    201: { description: 'Queued', content: json('CreatedJob') },
    200: { description: 'The job of a replayed Idempotency-Key, with its current status', content: json('CreatedJob') },
    ...common,
    400: error('Invalid JSON, an invalid field (named in `field`), or an invalid Idempotency-Key'),
    409: error('A request with this Idempotency-Key is still being created; retry (Retry-After)'),
    413: error(`The body is larger than ${maxRequestBytes} bytes`),
    415: error('The body is not application/json'),
    422: error(
      'Idempotency-Key reused with another body, a callback_url that is not allowed, or a job the queue refuses',
    ),
    503: error('The queue could not take the job; retry with the same Idempotency-Key'),
  },
};

/** The OpenAPI 3.1 description served at `GET /v1/openapi.json` and committed as docs/openapi.json. */
export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'codefleet HTTP API',
      version: '1.0.0',
      description:
        'Queue coding jobs, read their status, cancel them. Request bodies are application/json. Completion webhooks ' +
        "are POSTed to a job's callback_url (see the createJob callback and the CallbackPayload schema), signed: " +
        'X-Codefleet-Signature = sha256=<hex HMAC-SHA256 of "<X-Codefleet-Timestamp>.<raw body>"> keyed with the ' +
        'callback secret; dedupe on X-Codefleet-Event-Id.',
    },
    // The default address; behind a TLS proxy, the proxy's. Paths are absolute from the server's root.
    servers: [
      {
        url: 'http://127.0.0.1:8789',
        description: 'http_api.host:port by default (loopback); put a TLS proxy in front to expose it',
      },
    ],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'http_api.token' } },
      schemas: {
        CreateJob: createJobBody,
        CreatedJob: createdJob,
        JobStatus: jobStatus,
        Error: errorBody,
        CallbackPayload: callbackBody,
      },
    },
    paths: {
      '/v1/jobs': { post: createJob },
      '/v1/jobs/{id}': {
        get: {
          operationId: 'getJob',
          summary: 'Status and run summary of a job',
          parameters: [jobId],
          responses: { 200: { description: 'The job', content: json('JobStatus') }, ...onJob },
        },
      },
      '/v1/jobs/{id}/cancel': {
        post: {
          operationId: 'cancelJob',
          summary: 'Ask a queued or running job to stop (no body, or an empty JSON one)',
          parameters: [jobId],
          responses: {
            202: {
              description: 'Cancel requested; the worker stops at its next stage or heartbeat',
              content: json('JobStatus'),
            },
            ...onJob,
            409: error('The job has already finished'),
            413: error(`The body is larger than ${maxRequestBytes} bytes`),
            415: error('A body that is not application/json'),
          },
        },
      },
      '/v1/openapi.json': {
        get: {
          operationId: 'openApi',
          summary: 'This description',
          security: [],
          responses: {
            200: { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } },
          },
        },
      },
    },
  };
}
