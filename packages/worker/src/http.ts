import { createHttpApp, listen } from '@codefleet/http-server';
import type { WorkerMonitor } from './monitor.js';

/** A running health and metrics endpoint. */
export interface MonitorServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /healthz` (200 `ok`, or 503 with the reason) and `GET /metrics`
 * (Prometheus text format) for a worker process. Any other method is 405, any other path
 * 404. Binds to `host` (default loopback: expose it on purpose, not by accident).
 */
export async function startMonitorServer(
  monitor: WorkerMonitor,
  options: { port: number; host?: string },
): Promise<MonitorServer> {
  const app = createHttpApp();
  // GET routes answer HEAD too (Fastify's exposeHeadRoutes).
  app.get('/healthz', async (_req, reply) => {
    const health = monitor.health();
    return reply
      .code(health.ok ? 200 : 503)
      .type('text/plain; charset=utf-8')
      .send(health.ok ? 'ok\n' : `unhealthy: ${health.reason}\n`);
  });
  app.get('/metrics', async (_req, reply) => {
    try {
      const text = await monitor.registry.metrics();
      return reply.type(monitor.registry.contentType).send(text);
    } catch (err) {
      return reply
        .code(500)
        .type('text/plain')
        .send(`metrics failed: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  });
  app.setNotFoundHandler(async (req, reply) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply.code(405).header('allow', 'GET, HEAD').send();
    return reply.code(404).type('text/plain').send('not found; try /healthz or /metrics\n');
  });
  const listening = await listen(app, options);
  return { port: listening.port, close: listening.close };
}
