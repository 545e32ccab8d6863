import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built `codefleet` binary, as `npm run codefleet` runs it. */
export const codefleetBin = fileURLToPath(new URL('../../../apps/cli/dist/bin/codefleet.js', import.meta.url));

/** What {@link runToExit} resolves: the wall time, stdout alone, and the tail of both streams. */
export interface Exited {
  ms: number;
  stdout: string;
  tail: string;
}

/**
 * Runs `argv` in `cwd` with exactly `env` to its exit; resolves on exit 0 and rejects with
 * the output's last 30 lines otherwise. stdout is kept apart: a JSON answer stays parseable
 * whatever the program says on stderr.
 */
export function runToExit(argv: readonly string[], cwd: string, env: Record<string, string>): Promise<Exited> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] ?? '', argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-20_000);
    };
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      keep(chunk);
    });
    child.stderr.on('data', keep);
    child.on('error', reject);
    child.on('exit', (code) => {
      const tail = output.trimEnd();
      if (code === 0) resolve({ ms: performance.now() - started, stdout, tail });
      else reject(new Error(`${argv.join(' ')} exited ${String(code)}:\n${tail.split('\n').slice(-30).join('\n')}`));
    });
  });
}

/** A running `codefleet` process; its output goes to `<dir>/<name>.log`. */
export interface CodefleetProcess {
  readonly child: ChildProcess;
  /** Resolves with the first stdout line matching `pattern` (e.g. the producer's "listening" line). */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<string>;
  /** SIGTERM (a graceful drain), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** Starts `codefleet --config <config> ...args` with exactly `env`. */
export function startCodefleet(
  args: string[],
  options: { config: string; env: Record<string, string>; dir: string; name: string },
): CodefleetProcess {
  const log = createWriteStream(join(options.dir, `${options.name}.log`));
  const child = spawn(process.execPath, [codefleetBin, '--config', options.config, ...args], {
    cwd: options.dir,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stdout = '';
  const waiters: (() => void)[] = [];
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    for (const wake of waiters.splice(0)) wake();
  });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  return {
    child,
    waitForLine: (pattern, timeoutMs) =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `${options.name}: no line matching ${String(pattern)} within ${timeoutMs} ms (see ${options.name}.log)`,
              ),
            ),
          timeoutMs,
        );
        const look = () => {
          const line = stdout.split('\n').find((l) => pattern.test(l));
          if (line !== undefined) {
            clearTimeout(timer);
            resolve(line);
          } else if (child.exitCode !== null) {
            clearTimeout(timer);
            reject(new Error(`${options.name} exited with ${String(child.exitCode)} (see ${options.name}.log)`));
          } else {
            waiters.push(look);
          }
        };
        void exited.then(() => {
          for (const wake of waiters.splice(0)) wake();
        });
        look();
      }),
    async stop(graceMs = 10_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      log.end();
    },
  };
}
