import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { freePort } from './ports.js';
import { createTempDir, type TempDir } from './temp-dir.js';
import { waitFor } from './wait.js';

/** A real `redis-server` started for a test on a random loopback port. */
export interface RedisServer {
  readonly host: string;
  readonly port: number;
  /** `redis://127.0.0.1:<port>`, with `:<password>@` when the server was started with one. */
  readonly url: string;
  /** The URL as `user` with `password` (percent-encoded); no user: the default user's. */
  urlAs(user: string | undefined, password: string): string;
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

/**
 * The rules of the Redis ACL user docs/operations.md gives a fleet (after `on >password`): keys
 * under the default prefix `codefleet`, every command but the dangerous ones (KEYS,
 * FLUSHALL, CONFIG, DEBUG, ...), and INFO, which BullMQ reads the server version with.
 * The queue conformance suite and the run store contract pass through a user with them.
 */
export const FLEET_ACL_RULES = '~codefleet:* +@all -@dangerous +info';

/** Options for {@link startRedis}. */
export interface RedisOptions {
  /** Turn on the append-only file (fsync every second), as a fleet deployment should. */
  appendOnly?: boolean;
  /** Path of the binary; default `redis-server` from PATH. */
  binary?: string;
  /** The default user's password (`requirepass`): connections without it get NOAUTH. */
  password?: string;
  /**
   * ACL users by name, each with its rules as an ACL file line takes them after the name,
   * e.g. `{ codefleet: 'on >pw ~codefleet:* +@all -@dangerous' }`. They are written to an
   * ACL file the server loads; the default user keeps `password` (or none).
   */
  users?: Record<string, string>;
}

/** redis-server's command line: loopback only, no RDB snapshots, AOF when asked. */
function serverArgs(port: number, dir: string, appendOnly: boolean, access: readonly string[]): string[] {
  return [
    ...['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''],
    ...['--appendonly', appendOnly ? 'yes' : 'no', '--appendfsync', 'everysec', '--protected-mode', 'no'],
    ...access,
  ];
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
  const auth = options.password === undefined ? [] : ['AUTH', options.password];
  const access = await accessArgs(options, data.path);

  const launch = async (fixedPort?: number) => {
    for (let tries = 0; ; tries += 1) {
      port = fixedPort ?? (await freePort());
      const args = serverArgs(port, data.path, options.appendOnly === true, access);
      const proc = execa(binary, args, { stdin: 'ignore', reject: false, cleanup: true, buffer: false });
      // Fail fast when the server exits (missing binary, port taken) instead of polling on.
      const exit = proc.then((result) => {
        throw result.failed && result.code === 'ENOENT'
          ? new Error(`${binary} not found on PATH; install it (Debian: apt-get install -y redis-server)`)
          : new Error(`redis-server exited before it was ready (exit ${result.exitCode ?? result.signal})`);
      });
      // Stopped when the server exits first: a poll left running held the test process open
      // for its whole deadline.
      const stopPolling = new AbortController();
      // Ready when this server answers with its dataset loaded, told by its pid: until it
      // listens, the port from freePort() can be another suite's redis-server on a busy
      // machine, which answers too.
      const ready = waitFor(async () => (await loadedServerPid(port, auth)) === proc.pid || undefined, {
        what: `redis-server on port ${port}`,
        signal: stopPolling.signal,
      });
      try {
        await Promise.race([ready, exit]);
        exit.catch(() => {});
        child = proc;
        return;
      } catch (error) {
        stopPolling.abort();
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
  const urlAs = (user: string | undefined, password: string) =>
    `redis://${encodeURIComponent(user ?? '')}:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  return {
    host: '127.0.0.1',
    get port() {
      return port;
    },
    get url() {
      return options.password === undefined ? `redis://127.0.0.1:${port}` : urlAs(undefined, options.password);
    },
    urlAs,
    dir: data.path,
    get pid() {
      return child?.pid;
    },
    command: (...args) => sendCommand(port, args, auth),
    kill,
    restart: () => launch(port),
    stop: async () => {
      await kill('SIGTERM');
      await data.dispose();
    },
  };
}

/** `--requirepass`, or an ACL file with the default user and `users` when there are any. */
async function accessArgs(options: RedisOptions, dir: string): Promise<string[]> {
  const users = Object.entries(options.users ?? {});
  if (users.length === 0) return options.password === undefined ? [] : ['--requirepass', options.password];
  const defaultUser = `user default on ${options.password === undefined ? 'nopass' : `>${options.password}`} ~* &* +@all`;
  const file = join(dir, 'users.acl');
  await writeFile(file, [defaultUser, ...users.map(([name, rules]) => `user ${name} ${rules}`)].join('\n') + '\n');
  return ['--aclfile', file];
}

/**
 * The pid of the redis-server answering on `port` (its INFO), once it has loaded its dataset;
 * undefined until then, or if none answers. A restart with AOF answers INFO while it loads,
 * and every other command with `-LOADING` (seen under load).
 */
async function loadedServerPid(port: number, auth: readonly string[]): Promise<number | undefined> {
  // INFO's default sections include server (the pid) and persistence (loading).
  const commands = [...(auth.length === 0 ? [] : [auth]), ['INFO'], ['QUIT']];
  try {
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port });
      let text = '';
      socket.setTimeout(2_000, () => socket.destroy(new Error('redis INFO timed out')));
      socket.once('error', reject);
      socket.on('data', (chunk) => (text += chunk.toString('utf8')));
      // QUIT makes the server close the connection once it has answered everything.
      socket.once('end', () => resolve(text));
      socket.once('connect', () => socket.write(commands.map(encodeCommand).join('')));
    });
    const pid = Number(/^process_id:(\d+)\r?$/m.exec(reply)?.[1]);
    const loaded = /^loading:0\r?$/m.test(reply);
    return pid > 0 && loaded ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** A command in RESP, as an array of bulk strings. */
function encodeCommand(command: readonly string[]): string {
  return `*${command.length}\r\n${command.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
}

/**
 * Speaks RESP directly so the testkit needs no Redis client dependency. With `auth`
 * (`AUTH password`), that goes first and the reply returned is the command's.
 */
function sendCommand(port: number, args: readonly string[], auth: readonly string[] = []): Promise<string> {
  const commands = auth.length === 0 ? [args] : [auth, args];
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    socket.setTimeout(2_000, () => socket.destroy(new Error('redis command timed out')));
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      const lines = reply.split('\r\n');
      if (lines.length > commands.length) {
        socket.end();
        resolve(lines[commands.length - 1]!);
      }
    });
    socket.once('connect', () => socket.write(commands.map(encodeCommand).join('')));
  });
}
