import { execa, type ResultPromise } from 'execa';
import { waitFor } from './wait.js';

/** A child process started for a test, whose output lines can be awaited. */
export interface FixtureProcess {
  readonly pid: number | undefined;
  /** Every stdout line received so far. */
  readonly lines: readonly string[];
  /** Everything received on stderr so far (for failure messages). */
  readonly stderr: string;
  /**
   * Resolves to the first stdout line matching `pattern` (already received or future). The
   * deadline defaults to {@link waitFor}'s, which follows the running test's timeout.
   */
  waitForLine(pattern: RegExp | string, timeoutMs?: number): Promise<string>;
  kill(signal?: NodeJS.Signals): void;
  /** Resolves when the process has exited, with its exit code and signal. */
  exited: Promise<{ exitCode: number | undefined; signal: string | undefined }>;
}

/** Options for {@link startFixture}. */
export interface FixtureOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Extra node flags, e.g. `--experimental-vm-modules`. */
  nodeArgs?: string[];
}

/**
 * Runs `node <script> ...args` with stdin closed and collects stdout line by line. Tests
 * use it for real fixture processes (a claimer, an agent that hangs, one that edits files).
 */
export function startFixture(
  script: string,
  args: readonly string[] = [],
  options: FixtureOptions = {},
): FixtureProcess {
  const lines: string[] = [];
  let stderr = '';
  let pending = '';
  const child: ResultPromise = execa(process.execPath, [...(options.nodeArgs ?? []), script, ...args], {
    cwd: options.cwd,
    env: options.env,
    stdin: 'ignore',
    reject: false,
    buffer: false,
    cleanup: true,
    // execa turns a SIGTERM into a SIGKILL 5 s later by default. A test's SIGTERM asks for a
    // graceful stop and may assert its exit code: under load, serve's drain took longer, and
    // the kill made it exit by signal. A process that ignores SIGTERM is still killed, later.
    forceKillAfterDelay: 60_000,
  });
  child.stdout?.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    lines.push(...parts);
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  // Aborted once the process is gone and its output read: a line it never printed is then
  // not waited for until the deadline.
  const gone = new AbortController();
  const exited = child.then((result) => {
    if (pending) lines.push(pending);
    // Its stderr as it was at the end: why a process quit is what it printed last.
    const said = stderr.trim() === '' ? 'nothing on stderr' : `stderr: ${stderr.slice(-500)}`;
    gone.abort(new Error(`the process ended (exit ${result.exitCode ?? result.signal}) without printing it (${said})`));
    return { exitCode: result.exitCode, signal: result.signal };
  });
  const match = (line: string, pattern: RegExp | string) =>
    typeof pattern === 'string' ? line.includes(pattern) : pattern.test(line);
  return {
    pid: child.pid,
    lines,
    get stderr() {
      return stderr;
    },
    waitForLine: (pattern, timeoutMs) =>
      waitFor(() => lines.find((line) => match(line, pattern)), {
        timeoutMs,
        what: `a line matching ${String(pattern)} from ${script}`,
        signal: gone.signal,
      }),
    kill: (signal = 'SIGTERM') => {
      child.kill(signal);
    },
    exited,
  };
}
