import { connect } from 'node:net';
import { execa, type ResultPromise } from 'execa';
import { freePort } from './ports.js';
import { createTempDir, type TempDir } from './temp-dir.js';
import { waitFor } from './wait.js';

/** A real `redis-server` started for a test on a random loopback port. */
export interface RedisServer {
  readonly host: string;
  readonly port: number;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** The data directory (AOF lives here when `appendOnly` is on). */
  readonly dir: string;
  readonly pid: number | undefined;
  /** Sends a raw command (inline protocol) and resolves to the first reply line, e.g. `+PONG`. */
  command(...args: string[]): Promise<string>;
  /** Kills the server with `signal` and waits until it has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the server again on the same port and data directory (after `kill`). */
  restart(): Promise<void>;
  /** Stops the server and removes its data directory. */
  stop(): Promise<void>;
}

/** Options for {@link startRedis}. */
export interface RedisOptions {
  /** Turn on the append-only file (fsync every second), as a fleet deployment should. */
  appendOnly?: boolean;
  /** Path of the binary; default `redis-server` from PATH. */
  binary?: string;
}

/**
 * Starts `redis-server` bound to 127.0.0.1 on a free port with its own temp data directory.
 * Fails with an install hint when the binary is missing, because that is the usual cause
 * on a fresh machine (`.ci/run` installs it).
 */
export async function startRedis(options: RedisOptions = {}): Promise<RedisServer> {
  const binary = options.binary ?? 'redis-server';
  const data: TempDir = await createTempDir('redis');
  let port = 0;
  let child: ResultPromise | undefined;

  const launch = async (fixedPort?: number) => {
    for (let tries = 0; ; tries += 1) {
      port = fixedPort ?? (await freePort());
      const args = [
        '--port', String(port),
        '--bind', '127.0.0.1',
        '--dir', data.path,
        '--save', '',
        '--appendonly', options.appendOnly ? 'yes' : 'no',
        '--appendfsync', 'everysec',
        '--protected-mode', 'no',
      ];
      const proc = execa(binary, args, { stdin: 'ignore', reject: false, cleanup: true, buffer: false });
      // Fail fast when the server exits (missing binary, port taken) instead of polling on.
      const exit = proc.then((result) => {
        throw result.failed && result.code === 'ENOENT'
          ? new Error(`${binary} not found on PATH; install it (Debian: apt-get install -y redis-server)`)
          : new Error(`redis-server exited before it was ready (exit ${result.exitCode ?? result.signal})`);
      });
      const ready = waitFor(async () => (await ping(port)) || undefined, {
        timeoutMs: 10_000,
        what: `redis-server on port ${port}`,
      });
      try {
        await Promise.race([ready, exit]);
        exit.catch(() => {});
        child = proc;
        return;
      } catch (error) {
        proc.kill('SIGKILL');
        await proc;
        ready.catch(() => {});
        // A port taken between freePort() and listen() makes the server exit: pick another.
        if (/not found on PATH/.test(String(error)) || fixedPort !== undefined || tries >= 3) throw error;
      }
    }
  };

  const kill = async (signal: NodeJS.Signals = 'SIGTERM') => {
    const proc = child;
    if (!proc) return;
    child = undefined;
    proc.kill(signal);
    await proc;
  };

  await launch();
  return {
    host: '127.0.0.1',
    get port() { return port; },
    get url() { return `redis://127.0.0.1:${port}`; },
    dir: data.path,
    get pid() { return child?.pid; },
    command: (...args) => sendCommand(port, args),
    kill,
    restart: () => launch(port),
    stop: async () => {
      await kill('SIGTERM');
      await data.dispose();
    },
  };
}

async function ping(port: number): Promise<boolean> {
  try {
    return (await sendCommand(port, ['PING'])) === '+PONG';
  } catch {
    return false;
  }
}

/** Speaks RESP directly so the testkit needs no Redis client dependency. */
function sendCommand(port: number, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    socket.setTimeout(2_000, () => socket.destroy(new Error('redis command timed out')));
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      const end = reply.indexOf('\r\n');
      if (end >= 0) {
        socket.end();
        resolve(reply.slice(0, end));
      }
    });
    socket.once('connect', () => {
      const encoded = `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
      socket.write(encoded);
    });
  });
}
