import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A loopback HTTP proxy in front of the SQS emulator that counts requests per SQS action. */
export interface CountingProxy {
  /** `http://127.0.0.1:<port>`: the `queue.sqs.endpoint` workers are given. */
  readonly url: string;
  /** Requests since the last reset, by action (`ReceiveMessage`, `DeleteMessage`, ...). */
  counts(): Record<string, number>;
  total(): number;
  reset(): void;
  close(): Promise<void>;
}

/**
 * The action of one SQS request: the JSON protocol names it in `X-Amz-Target`
 * (`AmazonSQS.ReceiveMessage`), the query protocol in the body's `Action` field.
 */
function actionOf(target: string | string[] | undefined, body: string): string {
  if (typeof target === 'string' && target !== '') return target.replace(/^AmazonSQS\./, '');
  return new URLSearchParams(body).get('Action') ?? 'unknown';
}

/** Starts a counting proxy to `target` (the emulator's address) on a random loopback port. */
export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  let counts = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const action = actionOf(req.headers['x-amz-target'], body.toString('utf8'));
      counts.set(action, (counts.get(action) ?? 0) + 1);
      const forwarded = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forwarded.on('error', () => {
        if (!res.headersSent) res.writeHead(502).end();
      });
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts: () => Object.fromEntries(counts),
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    reset: () => {
      counts = new Map();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
