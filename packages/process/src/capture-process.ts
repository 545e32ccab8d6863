import { spawn } from 'node:child_process';

/** Options for {@link captureProcess}. */
export interface CaptureProcessOptions {
  cwd: string;
  /** The complete environment of the child: nothing is inherited implicitly. */
  env: Readonly<Record<string, string>>;
  /** Output beyond this (stdout and stderr together) stops the process; default 64 MiB. */
  maxBytes?: number;
}

/** A short command's whole stdout and stderr, apart, and how it exited. */
export interface CapturedProcess {
  /** null when a signal ended it, or it never started. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** Set when the process could not start (e.g. ENOENT), or printed more than `maxBytes`. */
  spawnError?: string;
}

/**
 * Runs `argv` (an argument array, never a shell string) with stdin closed and keeps all of
 * stdout and stderr apart: for short listings whose output is parsed (`git status -z`).
 * Long or untrusted runs (agents, verification, fetches) go through `runProcess`, which
 * bounds output, times out and kills the whole process group.
 */
export function captureProcess(argv: readonly string[], options: CaptureProcessOptions): Promise<CapturedProcess> {
  const [file, ...args] = argv;
  if (!file) throw new TypeError('captureProcess: argv must name a program');
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(file, args, {
        cwd: options.cwd,
        env: { ...options.env },
        stdio: ['ignore', 'pipe', 'pipe'],
        windowsHide: true,
      });
    } catch (error) {
      resolve({
        exitCode: null,
        stdout: '',
        stderr: '',
        spawnError: String((error as Error).message).split('\n')[0] ?? 'could not start',
      });
      return;
    }
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let bytes = 0;
    let tooMuch = false;
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > maxBytes) {
        tooMuch = true;
        child.kill('SIGKILL');
        return;
      }
      into.push(chunk);
    };
    // 'error' first: a spawn that fails late (EMFILE, ENOENT) emits it on the next tick and
    // leaves stdout and stderr undefined.
    let spawnError: string | undefined;
    child.once('error', (error) => {
      spawnError = error.message.split('\n')[0] ?? 'could not start';
    });
    child.stdout?.on('data', collect(out));
    child.stderr?.on('data', collect(err));
    // 'close': the process has exited and both pipes are drained (an 'error' without a
    // start is followed by 'close' too).
    child.once('close', (code) => {
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (tooMuch) spawnError = `printed more than ${maxBytes} bytes; stopped`;
      resolve({
        exitCode: spawnError === undefined ? code : null,
        stdout,
        stderr,
        ...(spawnError === undefined ? {} : { spawnError }),
      });
    });
  });
}
