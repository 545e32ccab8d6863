import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';

/** One worker process of the fleet under test: the real `codefleet worker` binary. */
export interface FleetWorker {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  alive: boolean;
  /** Stopped on purpose by the harness (not a crash). */
  killed: boolean;
  /** Exit code or signal once exited. */
  exit?: number | string | undefined;
}

/** Starts and stops `codefleet worker` processes; their logs go to files in `dir`. */
export class Fleet {
  readonly #bin: string;
  readonly #config: string;
  readonly #env: Record<string, string>;
  readonly #dir: string;
  readonly #logs: WriteStream[] = [];
  readonly workers: FleetWorker[] = [];
  #started = 0;

  constructor(options: { bin: string; config: string; env: Record<string, string>; dir: string }) {
    this.#bin = options.bin;
    this.#config = options.config;
    this.#env = options.env;
    this.#dir = options.dir;
  }

  /** Starts one more worker (concurrency 2). */
  start(): FleetWorker {
    this.#started += 1;
    const name = `worker-${this.#started}`;
    const log = createWriteStream(join(this.#dir, `${name}.log`));
    this.#logs.push(log);
    const child = spawn(process.execPath, [this.#bin, '--config', this.#config, 'worker', '--concurrency', '2'], {
      env: { ...this.#env, CODEFLEET_WORKER_ID: name },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    const worker: FleetWorker = {
      name,
      pid: child.pid ?? -1,
      child,
      alive: true,
      killed: false,
      exited: new Promise<void>((resolve) =>
        child.once('exit', (code, signal) => {
          worker.alive = false;
          worker.exit = signal ?? code ?? undefined;
          resolve();
        }),
      ),
    };
    this.workers.push(worker);
    return worker;
  }

  live(): FleetWorker[] {
    return this.workers.filter((w) => w.alive);
  }

  /** SIGTERM to every live worker (graceful drain), then SIGKILL after `graceMs`. */
  /** Returns the names of workers that did not drain in time and were killed. */
  async stopAll(graceMs: number): Promise<string[]> {
    const live = this.live();
    for (const w of live) w.killed = true;
    for (const w of live) w.child.kill('SIGCONT');
    for (const w of live) w.child.kill('SIGTERM');
    const forced: string[] = [];
    const timer = setTimeout(() => {
      for (const w of this.live()) {
        forced.push(w.name);
        w.child.kill('SIGKILL');
      }
    }, graceMs);
    await Promise.all(live.map((w) => w.exited));
    clearTimeout(timer);
    for (const log of this.#logs) log.end();
    return forced;
  }
}
