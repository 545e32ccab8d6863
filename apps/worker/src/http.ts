import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WorkerMonitor } from './monitor.js';

/** A running health and metrics endpoint. */
export interface MonitorServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /healthz` (200 `ok`, or 503 with the reason) and `GET /metrics`
 * (Prometheus text format) for a worker process. Anything else is 404. Binds to
 * `host` (default loopback: expose it on purpose, not by accident).
 */
export async function startMonitorServer(
  monitor: WorkerMonitor,
  options: { port: number; host?: string },
): Promise<MonitorServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      const health = monitor.health();
      res
        .writeHead(health.ok ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8' })
        .end(health.ok ? 'ok\n' : `unhealthy: ${health.reason}\n`);
      return;
    }
    if (path === '/metrics') {
      monitor.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': monitor.registry.contentType }).end(text),
        (err: unknown) =>
          res
            .writeHead(500, { 'content-type': 'text/plain' })
            .end(`metrics failed: ${err instanceof Error ? err.message : String(err)}\n`),
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found; try /healthz or /metrics\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
