import type { FastifyInstance } from 'fastify';
import { createHttpApp, listen, mountNodeHandler, type Listening } from '@codefleet/http-server';
import type { Runtime } from '../runtime.js';
import type { ProducerMetrics } from './serve-metrics.js';

/** Where each producer takes its deliveries on `codefleet serve`'s one port. */
export const servePrefixes = { webhook: '/webhook', line: '/line', http: '/v1', slack: '/slack/events' } as const;

/**
 * The port a surface listens on by itself, or undefined when it is served on the shared
 * port: its own port key unset, or set to the shared port itself (a config written before
 * there was one port, where the webhook's 8787 is also serve's default).
 */
export function ownPort(rt: Runtime, port: number | undefined): number | undefined {
  return port === undefined || (port === rt.config.serve.port && port !== 0) ? undefined : port;
}

/** `GET /healthz` (the producers this process hosts) and `GET /metrics` (Prometheus text). */
export function healthRoutes(app: FastifyInstance, names: readonly string[], metrics: ProducerMetrics): void {
  app.get('/healthz', async () => ({ status: 'ok', producers: names }));
  app.get('/metrics', async (_req, reply) => {
    try {
      return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    } catch (err) {
      return reply
        .code(500)
        .type('text/plain')
        .send(`metrics failed: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  });
}

/** `/healthz` and `/metrics` on a port of their own (`serve --health-port`); anything else is 404. */
export async function listenHealth(
  port: number,
  host: string,
  names: readonly string[],
  metrics: ProducerMetrics,
): Promise<Listening> {
  const app = createHttpApp();
  healthRoutes(app, names, metrics);
  app.setNotFoundHandler(async (_req, reply) => reply.code(404).send({ error: 'not found' }));
  return listen(app, { port, host });
}

/**
 * The dashboard in a `serve` process: on a port of its own when one is asked for
 * (`--dashboard-port`, or `dashboard.port`), else on the shared app, where it answers every
 * path no producer, /healthz or /metrics claims (its pages sit at the root).
 */
export async function serveDashboard(
  rt: Runtime,
  port: number | undefined,
  app: FastifyInstance,
  out: (line: string) => void,
): Promise<{ close(): Promise<void> }> {
  const { mountDashboard } = await import('./dashboard.js');
  if (port !== undefined) return mountDashboard(rt, { port }, out);
  const mounted = await mountDashboard(rt, { mount: true }, out);
  const handler = await mounted.handler!();
  for (const path of ['/', '/*']) mountNodeHandler(app, path, handler);
  return mounted;
}
