import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** A plain Node request handler, as a library that brings its own (Bolt's receiver) hands out. */
export type NodeHandler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Serves every method on `path` with `handler`, which reads the request body itself: the
 * body is left unread for it (a library that checks a signature reads the bytes on its
 * own), and Fastify steps aside for the answer. Registered as a plugin of its own, so the
 * pass-through parser reaches no other route.
 */
export function mountNodeHandler(app: FastifyInstance, path: string, handler: NodeHandler): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
    scope.all(path, (req, reply) => {
      reply.hijack();
      handler(req.raw, reply.raw);
    });
  });
}
