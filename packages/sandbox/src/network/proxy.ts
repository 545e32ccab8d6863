import { lookup as dnsLookup } from 'node:dns/promises';
import { chmod, rm } from 'node:fs/promises';
import { createServer, connect, isIP, type AddressInfo, type Server, type Socket } from 'node:net';
import type { NetworkRefusal } from '@codefleet/process';
import { decide, normalizeHost, parseAllowEntry, type NetworkPolicy } from './policy.js';

/** Where one run's proxy listens: a unix socket (bound into a bwrap run) or a loopback port (Seatbelt). */
type ProxyListen = { path: string } | { port: number };

export interface RunProxyOptions {
  policy: NetworkPolicy;
  listen: ProxyListen;
  /** Every address a name resolves to; the system resolver by default. */
  lookup?: (host: string) => Promise<string[]>;
  /** Told of each refusal as it happens (the worker logs it with the job and counts it). */
  onRefused?: (refusal: NetworkRefusal) => void;
  /** Deadline for resolving a name and for connecting to it. Default 15 s. */
  connectTimeoutMs?: number;
}

/** One run's proxy, open until `close`. */
export interface RunProxy {
  /** The socket path, or the loopback port, clients reach it at. */
  readonly listen: ProxyListen;
  /** The refusals so far, in order (the first {@link maxRefusalsKept}), and how many in all. */
  refusals(): { kept: NetworkRefusal[]; total: number };
  close(): Promise<void>;
}

/** Refusals kept per run for its record; the rest are counted. */
const maxRefusalsKept = 50;
const maxHeadBytes = 16 * 1024;

/**
 * An HTTP proxy for one sandboxed run: `CONNECT host:port` (HTTPS, and any TCP protocol a
 * client tunnels) and absolute-form plain HTTP requests (`GET http://host/…`, one request per
 * connection). Each destination is resolved here and judged on the resolved address by the
 * policy ({@link decide}); the connection goes to that address only, so a name that later
 * resolves elsewhere (DNS rebinding) and a redirect to an internal host (a new request,
 * judged again) get nowhere. A refusal is answered `403` with the reason.
 */
export async function openRunProxy(options: RunProxyOptions): Promise<RunProxy> {
  const policy = { mode: options.policy.mode, allow: options.policy.allow.map(parseAllowEntry) };
  const lookup = options.lookup ?? systemLookup;
  const timeoutMs = options.connectTimeoutMs ?? 15_000;
  const kept: NetworkRefusal[] = [];
  let total = 0;
  const open = new Set<Socket>();
  const refuse = (client: Socket, destination: string, reason: string) => {
    const refusal = { destination, reason };
    total += 1;
    if (kept.length < maxRefusalsKept) kept.push(refusal);
    options.onRefused?.(refusal);
    answer(client, 403, `codefleet sandbox: ${destination} refused: ${reason}`);
  };

  const server = createServer((client) => {
    open.add(client);
    client.once('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    readHead(client, (head, rest) => {
      const request = parseRequest(head);
      if ('error' in request) return answer(client, 400, `codefleet sandbox proxy: ${request.error}`);
      const destination = `${request.host.includes(':') ? `[${request.host}]` : request.host}:${request.port}`;
      void withDeadline(lookup(request.host), timeoutMs).then(
        (addresses) => {
          const verdict = decide(policy, request.host, request.port, addresses);
          if (!verdict.allowed) return refuse(client, destination, verdict.reason);
          const upstream = connect({ host: verdict.address, port: request.port });
          let connected = false;
          open.add(upstream);
          upstream.once('close', () => open.delete(upstream));
          upstream.setTimeout(timeoutMs, () => upstream.destroy(new Error(`no connection in ${timeoutMs} ms`)));
          upstream.once('error', (error) =>
            connected
              ? client.destroy()
              : answer(client, 502, `codefleet sandbox proxy: ${destination}: ${error.message}`),
          );
          upstream.once('connect', () => {
            connected = true;
            upstream.setTimeout(0);
            if (request.method === 'CONNECT') client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
            else upstream.write(request.forward);
            if (rest.length > 0) upstream.write(rest);
            client.pipe(upstream).on('error', () => client.destroy());
            upstream.pipe(client).on('error', () => upstream.destroy());
            client.once('close', () => upstream.destroy());
            upstream.once('close', () => client.destroy());
          });
        },
        (error: Error) => answer(client, 502, `codefleet sandbox proxy: ${destination}: ${error.message}`),
      );
    });
  });
  const address = await listen(server, options.listen);
  return {
    listen: address,
    refusals: () => ({ kept: [...kept], total }),
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if ('path' in address) await rm(address.path, { force: true });
    },
  };
}

async function listen(server: Server, where: ProxyListen): Promise<ProxyListen> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if ('path' in where) server.listen(where.path, () => resolve());
    else server.listen(where.port, '127.0.0.1', () => resolve());
  });
  if ('path' in where) {
    // Only the worker's user (and the run, through its bind mount) may connect.
    await chmod(where.path, 0o600);
    return where;
  }
  return { port: (server.address() as AddressInfo).port };
}

async function systemLookup(host: string): Promise<string[]> {
  if (isIP(host) !== 0) return [host];
  const found = await dnsLookup(host, { all: true, verbatim: true });
  return found.map((entry) => entry.address);
}

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the resolver in ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

// Collects the request head (up to the blank line), then hands it over with what followed it.
function readHead(client: Socket, then: (head: string, rest: Buffer) => void): void {
  let buffered = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    const end = buffered.indexOf('\r\n\r\n');
    if (end === -1) {
      if (buffered.length > maxHeadBytes) {
        client.off('data', onData);
        answer(client, 431, 'codefleet sandbox proxy: request head too large');
      }
      return;
    }
    client.off('data', onData);
    client.pause();
    then(buffered.subarray(0, end + 4).toString('latin1'), buffered.subarray(end + 4));
  };
  client.on('data', onData);
}

type ParsedRequest = { method: string; host: string; port: number; forward: string } | { error: string };

/** The destination of a proxy request, and for plain HTTP the request rewritten for the origin server. */
function parseRequest(head: string): ParsedRequest {
  const [requestLine = '', ...headerLines] = head.split('\r\n');
  const [method, target, version] = requestLine.split(' ');
  if (method === undefined || target === undefined || version === undefined || !/^HTTP\/1\.[01]$/.test(version))
    return { error: 'not an HTTP/1 request' };
  if (method === 'CONNECT') {
    const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(target);
    const port = Number(match?.[3]);
    if (match === null || !(port >= 1 && port <= 65_535))
      return { error: `CONNECT needs host:port, got ${JSON.stringify(target.slice(0, 100))}` };
    return { method, host: normalizeHost(match[1] ?? match[2]!), port, forward: '' };
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return { error: 'a proxy request names an absolute http:// URL (use CONNECT for https)' };
  }
  if (url.protocol !== 'http:')
    return { error: `only http:// is proxied in plain form (use CONNECT for ${url.protocol})` };
  // One request per connection: a kept-alive connection would carry the next request, for
  // another host, to this one.
  const headers = headerLines.filter(
    (line) => line !== '' && !/^(proxy-connection|proxy-authorization|connection|keep-alive)\s*:/i.test(line),
  );
  const forward = `${method} ${url.pathname}${url.search} ${version}\r\n${[...headers, 'Connection: close'].join('\r\n')}\r\n\r\n`;
  return { method, host: normalizeHost(url.hostname), port: url.port === '' ? 80 : Number(url.port), forward };
}

function answer(client: Socket, status: number, message: string): void {
  const reasons: Record<number, string> = {
    400: 'Bad Request',
    403: 'Forbidden',
    431: 'Request Header Fields Too Large',
    502: 'Bad Gateway',
  };
  const body = `${message}\n`;
  client.end(
    `HTTP/1.1 ${status} ${reasons[status] ?? 'Error'}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
