/**
 * The warden: the first program of every bubblewrap run, started as
 * `node warden.mjs <config as JSON> -- <program> <args...>` inside the run's namespaces. It
 * 1. bridges the run's network namespace (only a loopback of its own) to the worker's proxy:
 *    a proxy port on the run's loopback relayed to the proxy's unix socket bound in, and each
 *    allowed host loopback port relayed as a `CONNECT` through it, so a local model server
 *    named in `sandbox.network.allow` is reached at its usual address;
 * 2. watches the run's PID namespace (it sees only the run's processes in /proc): more
 *    processes, more resident memory, or fuller tmpfs mounts than the limits allow end the
 *    run at once: every process is killed, and the limit hit is reported on the status pipe
 *    (fd 3, which the program does not inherit) as one JSON line
 *    `{"codefleet-warden":{"limit":…,"max":…,"seen":…}}`, after `{"codefleet-warden":{"started":true}}`
 *    said at start (bubblewrap got as far as starting it);
 * 3. starts the program, and exits as it did (128 + the signal's number for a signal).
 * Killing the warden ends the run: bubblewrap's init then exits and the kernel kills the rest
 * of the namespace. It imports only Node's own modules: it runs as a single file from where
 * the worker binds it.
 */
import { spawn } from 'node:child_process';
import { fstatSync, readdirSync, readFileSync, statfsSync, writeSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { constants } from 'node:os';

/** What the worker tells the warden; all sizes in bytes. */
export interface WardenConfig {
  proxy?: {
    /** The proxy's unix socket, as bound inside. */
    socket: string;
    /** Loopback port inside the run that HTTP(S)_PROXY names. */
    port: number;
    /** Host loopback destinations (`127.0.0.1:11434`) relayed at the same port inside. */
    forwards: { host: string; port: number }[];
  };
  limits: {
    processes: number;
    memoryBytes: number;
    /** tmpfs mounts whose bytes and files are watched (their size is also the mount's own). */
    mounts: { path: string; name: string; files: number }[];
    /** Enforced by the kernel (prlimit); named here when the program dies of it. */
    cpuSeconds: number;
    fileBytes: number;
  };
  pollMs: number;
  /** `NODE_OPTIONS` meant for the program, never for the warden. */
  nodeOptions: string | null;
}

/** A limit the run went past. */
interface LimitHit {
  limit: string;
  max: number;
  seen: number;
}

// The status pipe (a socket from the worker's Node). Node's children do not inherit it: the
// program has no way to write reports of its own (a test holds this).
const statusFd = (() => {
  try {
    fstatSync(3);
    return 3;
  } catch {
    return undefined; // run by hand, without the pipe
  }
})();

function main(): void {
  say({ started: true });
  const separator = process.argv.indexOf('--');
  const config = JSON.parse(process.argv[2] ?? '{}') as WardenConfig;
  const [file, ...args] = process.argv.slice(separator + 1);
  if (separator === -1 || file === undefined) {
    process.stderr.write('codefleet warden: no program given\n');
    process.exit(127);
  }
  void bridge(config.proxy).then(
    (servers) => supervise(config, file, args, servers),
    (error: Error) => {
      process.stderr.write(`codefleet warden: cannot open the network bridge: ${error.message}\n`);
      process.exit(126);
    },
  );
}

function supervise(config: WardenConfig, file: string, args: string[], servers: Server[]): void {
  // The warden is its own program inside the run: its environment is the program's.
  // eslint-disable-next-line no-restricted-syntax
  const env = { ...process.env };
  if (config.nodeOptions === null) delete env.NODE_OPTIONS;
  else env.NODE_OPTIONS = config.nodeOptions;
  let ended = false;
  const end = (hit: LimitHit | undefined, code: number) => {
    if (ended) return;
    ended = true;
    clearInterval(timer);
    if (hit !== undefined) {
      // Everything in the namespace but this process and bubblewrap's init.
      try {
        process.kill(-1, 'SIGKILL');
      } catch {
        // Nothing left to kill.
      }
      report(hit);
    }
    for (const server of servers) server.close();
    process.exit(code);
  };
  let tick = 0;
  const timer = setInterval(() => {
    tick += 1;
    const hit = checkLimits(config.limits, tick % 4 === 0);
    if (hit !== undefined) end(hit, 128 + constants.signals.SIGKILL);
  }, config.pollMs);
  const child = spawn(file, args, { stdio: 'inherit', env });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    process.stderr.write(`codefleet warden: ${file}: ${error.message}\n`);
    end(undefined, 127);
  });
  child.on('exit', (code, signal) => {
    // A process limit the kernel enforces reports itself as a signal to the one that hit it.
    const { cpuSeconds, fileBytes } = config.limits;
    const hit =
      signal === 'SIGXCPU'
        ? { limit: 'cpu_seconds', max: cpuSeconds, seen: 0 }
        : signal === 'SIGXFSZ'
          ? { limit: 'file_size', max: fileBytes, seen: 0 }
          : undefined;
    if (hit !== undefined) report(hit);
    end(undefined, code ?? 128 + (signal === null ? 0 : constants.signals[signal]));
  });
}

function report(hit: LimitHit): void {
  say(hit);
}

function say(what: object): void {
  if (statusFd === undefined) return;
  try {
    writeSync(statusFd, `${JSON.stringify({ 'codefleet-warden': what })}\n`);
  } catch {
    // The worker is gone; the run goes with it.
  }
}

/** The first limit the run is past now, if any; memory and mounts only when `full`. */
function checkLimits(limits: WardenConfig['limits'], full: boolean): LimitHit | undefined {
  const pids = readdirSync('/proc').filter(
    (name) => /^\d+$/.test(name) && name !== '1' && name !== String(process.pid),
  );
  if (pids.length > limits.processes) return { limit: 'processes', max: limits.processes, seen: pids.length };
  if (!full) return undefined;
  let resident = 0;
  for (const pid of pids) resident += residentBytes(pid);
  if (resident > limits.memoryBytes) return { limit: 'memory', max: limits.memoryBytes, seen: resident };
  for (const mount of limits.mounts) {
    const stats = statfsSync(mount.path);
    const files = stats.files - stats.ffree;
    if (files > mount.files) return { limit: `${mount.name}_files`, max: mount.files, seen: files };
    if (stats.bavail === 0)
      return { limit: `${mount.name}_size`, max: stats.blocks * stats.bsize, seen: stats.blocks * stats.bsize };
  }
  return undefined;
}

function residentBytes(pid: string): number {
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1];
    return kb === undefined ? 0 : Number(kb) * 1024;
  } catch {
    return 0; // gone meanwhile
  }
}

async function bridge(proxy: WardenConfig['proxy']): Promise<Server[]> {
  if (proxy === undefined) return [];
  const servers = [await listenOn(proxy.port, '127.0.0.1', (client) => relay(client, proxy.socket, undefined))];
  for (const forward of proxy.forwards) {
    const target = `${forward.host.includes(':') ? `[${forward.host}]` : forward.host}:${forward.port}`;
    servers.push(await listenOn(forward.port, '127.0.0.1', (client) => relay(client, proxy.socket, target)));
    // `localhost` resolves to ::1 first for many clients.
    servers.push(
      ...(await listenOn(forward.port, '::1', (client) => relay(client, proxy.socket, target)).then(
        (server) => [server],
        () => [],
      )),
    );
  }
  return servers;
}

function listenOn(port: number, host: string, onConnection: (client: Socket) => void): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer(onConnection);
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

// The client's bytes go to the proxy as they are (it speaks HTTP proxy to the proxy), or, for
// a forwarded port, after a CONNECT to the host destination the proxy answers first.
function relay(client: Socket, socketPath: string, connectTo: string | undefined): void {
  const upstream = connect(socketPath);
  const fail = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', fail);
  upstream.on('error', fail);
  client.on('close', fail);
  upstream.on('close', fail);
  if (connectTo === undefined) {
    client.pipe(upstream);
    upstream.pipe(client);
    return;
  }
  client.pause();
  upstream.write(`CONNECT ${connectTo} HTTP/1.1\r\nHost: ${connectTo}\r\n\r\n`);
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end === -1) return;
    upstream.off('data', onData);
    if (!/^HTTP\/1\.[01] 200/.test(head.toString('latin1', 0, 12))) return fail();
    if (head.length > end + 4) client.write(head.subarray(end + 4));
    client.pipe(upstream);
    upstream.pipe(client);
  };
  upstream.on('data', onData);
}

main();
