import type { FastifyInstance } from 'fastify';

/**
 * Makes every request body in `scope` (a plugin's encapsulated app) the exact bytes
 * received, as a Buffer of at most `limit` bytes, whatever its content type: webhook
 * signatures are HMACs over those bytes, so nothing may be parsed or re-encoded before the
 * check. A larger body is a 413 before it is read (`FST_ERR_CTP_BODY_TOO_LARGE`). Routes
 * outside `scope` keep their parsers.
 */
export function acceptRawBody(scope: FastifyInstance, limit: number): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: limit }, (_req, body, done) => done(null, body));
}

/** The raw body {@link acceptRawBody} read: empty when the request had none. */
export function rawBodyOf(body: unknown): Buffer {
  return Buffer.isBuffer(body) ? body : Buffer.alloc(0);
}
