import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST the receiver got. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

/**
 * A small completion-webhook receiver on loopback, for the tests: records every request and
 * answers a callback (a POST under `/hooks/`) with the next scripted status (200 when the
 * script is empty); `302` redirects to `/elsewhere`, which it would record too if a client
 * followed it. Only callbacks take a scripted status: on a busy machine another suite's probe
 * of a port it took for its own can land on this random one.
 */
export async function startReceiver(): Promise<{
  url: string;
  received: Received[];
  answer(...statuses: number[]): void;
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const script: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const callback = req.method === 'POST' && (req.url ?? '').startsWith('/hooks/');
      const status = (callback ? script.shift() : undefined) ?? 200;
      received.push({
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        status,
      });
      res.writeHead(status, status === 302 ? { location: '/elsewhere' } : {}).end(status >= 400 ? 'nope' : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    answer: (...statuses) => void script.push(...statuses),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
