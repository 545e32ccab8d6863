import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '@codefleet/log';
import { maxRequestBytes } from './schema.js';

/** A refusal the API answers with its stable `code` (and the field it is about). */
export class ApiError extends Error {
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

/** The field an ajv error is about: `title`, `dod.0`, or the missing or unknown property. */
function fieldOf(error: { instancePath: string; params: Record<string, unknown> }): string {
  const path = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const extra = error.params.missingProperty ?? error.params.additionalProperty;
  return typeof extra === 'string' ? (path === '' ? extra : `${path}.${extra}`) : path || '(body)';
}

/**
 * The API's error handler: its own refusals with their codes, schema failures as
 * `invalid_request` with the field, Fastify's refusals mapped to stable codes, anything
 * else a logged 500 that says nothing of the cause.
 */
export function apiErrorHandler(log: Logger) {
  return (error: FastifyError | ApiError, _req: FastifyRequest, reply: FastifyReply) => {
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
  };
}
