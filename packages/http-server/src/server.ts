import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';

/** Options of {@link createHttpApp}. */
export interface HttpAppOptions {
  /** Largest request body any route takes unless it sets its own `bodyLimit`; default Fastify's 1 MiB. */
  bodyLimit?: number;
  /**
   * Strict body validation: an unknown field or a number for a string is a 400, never
   * coerced, dropped or defaulted. Default false (Fastify's coercion, which querystrings need).
   */
  strictValidation?: boolean;
}

/** Where an app listens once {@link listen} resolved. */
export interface Listening {
  /** `http://host:port`, IPv6 hosts in brackets. */
  readonly url: string;
  readonly port: number;
  /** Stops taking connections, lets requests in flight finish (idle keep-alive ones are closed), then resolves. */
  close(): Promise<void>;
}

/**
 * A Fastify app with the defaults every inbound surface shares: no Fastify logger (each
 * surface logs through `@codefleet/log`), and a router that takes ids up to 256 characters
 * (a job id runs to 128, a run id adds its suffix; Fastify's default of 100 would make the
 * longest a 414). Surfaces register on it as plugins, each under its own prefix, so their
 * hooks, parsers and error handlers stay their own.
 */
export function createHttpApp(options: HttpAppOptions = {}): FastifyInstance {
  return Fastify({
    logger: false,
    ...(options.bodyLimit === undefined ? {} : { bodyLimit: options.bodyLimit }),
    // Under routerOptions: the top-level option is deprecated and warns on every start.
    routerOptions: { maxParamLength: 256 },
    ...(options.strictValidation
      ? {
          ajv: {
            customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false },
          },
        }
      : {}),
  }) as unknown as FastifyInstance;
}

/**
 * Listens on `host`:`port` (0: a free port; default host loopback, so a surface is exposed
 * on purpose, not by accident) and resolves once it accepts connections.
 */
export async function listen(app: FastifyInstance, options: { port: number; host?: string }): Promise<Listening> {
  await app.listen({ port: options.port, host: options.host ?? '127.0.0.1' });
  const address = app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { url: `http://${host}:${address.port}`, port: address.port, close: () => app.close() };
}
