import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { boundTail } from '@codefleet/core';
import { guardedArgv, parseGuardReport } from './parent-guard.js';
import { killMarkedStrays, runMarkVariable } from './strays.js';

/** Exit code recorded for a process stopped by its timeout, as `timeout(1)` does. */
export const timeoutExitCode = 124;

/** After the process exits, how long the rest of its output may take to arrive. */
const pipeDrainMs = 1_000;

/** Options for {@link runProcess}. */
export interface RunProcessOptions {
  cwd: string;
  /** The complete environment of the child: nothing is inherited implicitly. */
  env: Readonly<Record<string, string>>;
  /** Kill the whole process group after this long; exit code becomes 124. */
  timeoutMs?: number;
  /** Aborting kills the process group too (lease lost, shutdown, cancel). */
  signal?: AbortSignal;
  /** Bytes of combined stdout+stderr kept (the end of the output). Default 8192. */
  tailBytes?: number;
  /** Between SIGTERM and SIGKILL. Default 2000 ms. */
  killGraceMs?: number;
  /** Called with each chunk of output as it arrives (progress, live logs). */
  onOutput?: (chunk: string) => void;
  /**
   * Kill the process group when this process dies, even by SIGKILL: for agents and
   * verification steps, which write into a working copy another job may reuse. Costs a
   * small Node guard process per run, so short git calls go without. On Linux, processes
   * that left the group (`setsid`, a daemon) are found by a mark in their environment and
   * killed too, when the run ends and when this process dies.
   */
  dieWithParent?: boolean;
  /**
   * Unguarded runs only: the child gets a pipe as fd 3 and what it writes there is passed
   * here, for a wrapper's status reports (the sandbox's warden). The program the
   * wrapper starts may inherit the pipe too: treat what arrives as untrusted and unbounded.
   */
  onStatus?: (chunk: string) => void;
}

/** What happened to a process: the facts, never an interpretation. */
export interface ProcessResult {
  command: string[];
  /** 124 when the timeout stopped it; null when a signal from elsewhere ended it. */
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Stopped because `signal` aborted. */
  cancelled: boolean;
  durationMs: number;
  /** The end of combined stdout and stderr, bounded by `tailBytes`. */
  outputTail: string;
  /** Set when the process could not start at all (e.g. ENOENT: binary not on PATH). */
  spawnError?: string;
  /** Guarded runs: processes it left running outside its group, killed after it ended. */
  strays?: number;
  /** Sandboxed runs: the limit the run went past, which ended it. */
  resourceLimit?: ResourceLimitHit;
  /** Sandboxed runs: destinations the network policy refused (the first ones), and how many in all. */
  networkRefusals?: { kept: NetworkRefusal[]; total: number };
}

/** A per-run limit a sandboxed run went past (`sandbox.limits`): which, its value, what was seen. */
export interface ResourceLimitHit {
  /** `processes`, `memory`, `tmp_size`, `tmp_files`, `shm_size`, `shm_files`, `cpu_seconds`, `file_size`. */
  limit: string;
  max: number;
  seen: number;
}

/** A destination a sandboxed run asked for and was refused, and why. */
export interface NetworkRefusal {
  /** `host:port` as the run named it. */
  destination: string;
  reason: string;
}

/**
 * Runs `argv` (an argument array: never a shell string) with stdin closed, in its own
 * process group so a timeout or abort can kill everything it started, grandchildren
 * included. When the main process exits, any survivors left in the group are killed too,
 * so nothing an agent spawned outlives its run.
 */
export async function runProcess(argv: readonly string[], options: RunProcessOptions): Promise<ProcessResult> {
  const [file] = argv;
  if (!file) throw new TypeError('runProcess: argv must name a program');
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const notRun: Pick<ProcessResult, 'command' | 'exitCode' | 'signal' | 'timedOut' | 'cancelled'> = {
    command: [...argv],
    exitCode: null,
    signal: null,
    timedOut: false,
    cancelled: false,
  };
  // Already cancelled: start nothing. (Killing right after spawn can miss: until the child
  // has called setsid() its process group does not exist yet.)
  if (options.signal?.aborted) return { ...notRun, cancelled: true, durationMs: 0, outputTail: '' };
  const guarded = options.dieWithParent === true;
  const { NODE_OPTIONS: nodeOptions, ...programEnv } = options.env;
  const mark = guarded ? randomBytes(12).toString('hex') : undefined;
  const guardEnv = mark === undefined ? programEnv : { ...programEnv, [runMarkVariable]: mark };
  const [program, ...programArgs] = guarded ? guardedArgv(argv, nodeOptions) : argv;
  const tail = tailCollector(options.tailBytes ?? 8192, options.onOutput);

  const child = spawnInGroup(program ?? file, programArgs, {
    cwd: options.cwd,
    env: guarded ? guardEnv : { ...options.env },
    reportPipe: guarded || options.onStatus !== undefined,
  });
  if ('spawnError' in child) return { ...notRun, durationMs: elapsed(), outputTail: '', spawnError: child.spawnError };
  // Listen for 'error' first: a spawn that fails late (EMFILE, ENOENT) emits it on the next
  // tick and leaves stdio undefined; unheard, it would crash the worker.
  // Wait for the main process itself, not its pipes: a grandchild may hold them open.
  const exited = new Promise<{ code: number | null; signal: string | null; error?: Error }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
  });
  let guardReport = '';
  const output = readOutput(child, {
    keep: tail.keep,
    ...(guarded
      ? { onReport: (chunk) => (guardReport += chunk) }
      : options.onStatus === undefined
        ? {}
        : { onReport: options.onStatus }),
  });
  const stopper = stopOnTimeoutOrAbort(child, options);

  const exit = await exited;
  stopper.killGroup('SIGKILL');
  // Before waiting for the pipes: a stray may be what holds them open.
  const strays = mark === undefined ? 0 : await killMarkedStrays(mark);
  stopper.dispose();
  await output.drain();
  const { timedOut, cancelled } = stopper;
  // Guarded: the program's own exit as the guard saw it; without a report the guard was
  // killed with its group, and its exit is the group's.
  const reported = guarded ? parseGuardReport(guardReport) : undefined;
  if (reported !== undefined && 'spawnError' in reported) {
    return {
      ...notRun,
      timedOut,
      cancelled,
      durationMs: elapsed(),
      outputTail: tail.tail(),
      spawnError: reported.spawnError,
    };
  }
  const facts = reported ?? { code: exit.code, signal: exit.signal };
  const startError = exit.error;
  return {
    command: [...argv],
    exitCode: timedOut ? timeoutExitCode : facts.code,
    signal: facts.signal,
    timedOut,
    cancelled,
    durationMs: elapsed(),
    outputTail: tail.tail(),
    ...(startError ? { spawnError: String(startError.message || 'could not start').split('\n')[0] } : {}),
    ...(strays > 0 ? { strays } : {}),
  };
}

/**
 * Starts `program` in a process group of its own, so a kill reaches everything it started,
 * with stdin closed and fd 3 opened when `reportPipe` (the guard's report of the program's
 * exit, or the wrapper's status).
 */
function spawnInGroup(
  program: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string>; reportPipe: boolean },
): ChildProcess | { spawnError: string } {
  // node:child_process rather than execa: the same facts for this use (no shell, argument
  // arrays, an explicit environment), and about 3 MB less of every worker's memory and
  // 1 ms less per call. (execa's exit cleanup never applied here: it skips detached children.)
  try {
    return spawn(program, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: options.reportPipe ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
      detached: true,
      windowsHide: true,
    });
  } catch (error) {
    // Arguments spawn() refuses outright (a NUL byte in an argument, say).
    return { spawnError: String((error as Error).message).split('\n')[0] ?? 'could not start' };
  }
}

/** The end of a run's combined output as it arrives: about `tailBytes`, bounded on the way. */
function tailCollector(tailBytes: number, onOutput: ((chunk: string) => void) | undefined) {
  let output = '';
  // Bytes trimmed from the front of `output`: the tail's marker must count them too.
  let dropped = 0;
  return {
    keep(chunk: string) {
      output += chunk;
      // Trim in large steps so long outputs cost amortised O(n), not O(n²).
      if (output.length > tailBytes * 4) {
        let cut = output.length - tailBytes * 2;
        // Never between the halves of a surrogate pair: each half would count as 3 bytes.
        const unit = output.charCodeAt(cut);
        if (unit >= 0xdc00 && unit <= 0xdfff) cut -= 1;
        dropped += Buffer.byteLength(output.slice(0, cut), 'utf8');
        output = output.slice(cut);
      }
      onOutput?.(chunk);
    },
    tail: () => boundTail(output, tailBytes, { dropped }),
  };
}

/**
 * Reads the child's stdout and stderr into `keep`, and fd 3 (when it was opened) into
 * `onReport`. `drain` waits for the rest of the output once the process group is dead, then
 * closes the pipes.
 */
function readOutput(
  child: ChildProcess,
  readers: { keep: (chunk: string) => void; onReport?: (chunk: string) => void },
): { drain(): Promise<void> } {
  const reportPipe = readers.onReport === undefined ? undefined : (child.stdio?.[3] as Readable | null | undefined);
  const pipes = [child.stdout, child.stderr, reportPipe].filter((pipe): pipe is Readable => pipe != null);
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', readers.keep);
  child.stderr?.on('data', readers.keep);
  reportPipe?.setEncoding('utf8');
  if (readers.onReport !== undefined) reportPipe?.on('data', readers.onReport);
  const drained = Promise.all(
    pipes.map(
      (pipe) =>
        new Promise<void>((resolve) => {
          if (pipe.closed || pipe.destroyed) resolve();
          else pipe.once('close', () => resolve());
        }),
    ),
  );
  return {
    async drain() {
      // The group is dead now, so the pipes close at once, unless something left the group
      // and holds them.
      let waited: NodeJS.Timeout | undefined;
      await Promise.race([
        drained,
        new Promise((resolve) => {
          waited = setTimeout(resolve, pipeDrainMs);
        }),
      ]);
      clearTimeout(waited);
      for (const pipe of pipes) pipe.destroy();
    },
  };
}

/**
 * Stops the child's process group (SIGTERM, then SIGKILL after the grace) on the timeout or
 * when the signal aborts, and says which of the two happened; `dispose` clears the timers
 * and the abort listener.
 */
function stopOnTimeoutOrAbort(child: ChildProcess, options: RunProcessOptions) {
  let timedOut = false;
  let cancelled = false;
  const killGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // ESRCH: the group is gone, or not made yet (the child has not reached setsid()):
      // the main process at least.
      child.kill(signal);
    }
  };
  let escalation: NodeJS.Timeout | undefined;
  const stop = () => {
    killGroup('SIGTERM');
    escalation ??= setTimeout(() => killGroup('SIGKILL'), options.killGraceMs ?? 2_000);
  };
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          stop();
        }, options.timeoutMs);
  const onAbort = () => {
    cancelled = true;
    stop();
  };
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  return {
    get timedOut() {
      return timedOut;
    },
    get cancelled() {
      return cancelled;
    },
    killGroup,
    dispose() {
      clearTimeout(timer);
      clearTimeout(escalation);
      options.signal?.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * Something that runs a program the way {@link runProcess} does: `runProcess` itself, or a
 * sandbox bound to one job's working copy. Agents and verification steps take one, so the
 * pipeline decides where they run.
 */
export type ProcessRunner = (argv: readonly string[], options: RunProcessOptions) => Promise<ProcessResult>;
