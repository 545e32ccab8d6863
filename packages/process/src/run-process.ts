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
  const tailBytes = options.tailBytes ?? 8192;
  // Already cancelled: start nothing. (Killing right after spawn can miss: until the child
  // has called setsid() its process group does not exist yet.)
  if (options.signal?.aborted) {
    return {
      command: [...argv],
      exitCode: null,
      signal: null,
      timedOut: false,
      cancelled: true,
      durationMs: 0,
      outputTail: '',
    };
  }
  const guarded = options.dieWithParent === true;
  const { NODE_OPTIONS: nodeOptions, ...programEnv } = options.env;
  const mark = guarded ? randomBytes(12).toString('hex') : undefined;
  const guardEnv = mark === undefined ? programEnv : { ...programEnv, [runMarkVariable]: mark };
  const [program, ...programArgs] = guarded ? guardedArgv(argv, nodeOptions) : argv;
  let output = '';
  // Bytes trimmed from the front of `output`: the tail's marker must count them too.
  let dropped = 0;
  const keep = (chunk: string) => {
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
    options.onOutput?.(chunk);
  };

  // node:child_process rather than execa: the same facts for this use (no shell, argument
  // arrays, an explicit environment), and about 3 MB less of every worker's memory and
  // 1 ms less per call. (execa's exit cleanup never applied here: it skips detached children.)
  let child: ChildProcess;
  try {
    child = spawn(program ?? file, programArgs, {
      cwd: options.cwd,
      env: guarded ? guardEnv : { ...options.env },
      // fd 3 carries the guard's report of the program's exit, or the wrapper's status.
      stdio:
        guarded || options.onStatus !== undefined ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
      // Its own process group, so a kill reaches everything it started.
      detached: true,
      windowsHide: true,
    });
  } catch (error) {
    // Arguments spawn() refuses outright (a NUL byte in an argument, say).
    return {
      command: [...argv],
      exitCode: null,
      signal: null,
      timedOut: false,
      cancelled: false,
      durationMs: Math.round(performance.now() - started),
      outputTail: '',
      spawnError: String((error as Error).message).split('\n')[0] ?? 'could not start',
    };
  }
  // Listen for 'error' first: a spawn that fails late (EMFILE, ENOENT) emits it on the next
  // tick and leaves stdio undefined; unheard, it would crash the worker.
  // Wait for the main process itself, not its pipes: a grandchild may hold them open.
  const exited = new Promise<{ code: number | null; signal: string | null; error?: Error }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
  });
  const reportPipe =
    guarded || options.onStatus !== undefined ? (child.stdio?.[3] as Readable | null | undefined) : undefined;
  const pipes = [child.stdout, child.stderr, reportPipe].filter((pipe): pipe is Readable => pipe != null);
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let guardReport = '';
  reportPipe?.setEncoding('utf8');
  reportPipe?.on(
    'data',
    guarded
      ? (chunk: string) => {
          guardReport += chunk;
        }
      : (chunk: string) => options.onStatus?.(chunk),
  );
  const drained = Promise.all(
    pipes.map(
      (pipe) =>
        new Promise<void>((resolve) => {
          if (pipe.closed || pipe.destroyed) resolve();
          else pipe.once('close', () => resolve());
        }),
    ),
  );

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

  const exit = await exited;
  killGroup('SIGKILL');
  // Before waiting for the pipes: a stray may be what holds them open.
  const strays = mark === undefined ? 0 : await killMarkedStrays(mark);
  clearTimeout(timer);
  clearTimeout(escalation);
  options.signal?.removeEventListener('abort', onAbort);
  // The rest of the output (and the guard's report) is still in the pipes. The group is
  // dead now, so they close at once, unless something left the group and holds them.
  let waited: NodeJS.Timeout | undefined;
  await Promise.race([
    drained,
    new Promise((resolve) => {
      waited = setTimeout(resolve, pipeDrainMs);
    }),
  ]);
  clearTimeout(waited);
  for (const pipe of pipes) pipe.destroy();
  const startError = exit.error;
  // Guarded: the program's own exit as the guard saw it; without a report the guard was
  // killed with its group, and its exit is the group's.
  const reported = guarded ? parseGuardReport(guardReport) : undefined;
  if (reported !== undefined && 'spawnError' in reported) {
    return {
      command: [...argv],
      exitCode: null,
      signal: null,
      timedOut,
      cancelled,
      durationMs: Math.round(performance.now() - started),
      outputTail: boundTail(output, tailBytes, { dropped }),
      spawnError: reported.spawnError,
    };
  }
  const facts = reported ?? { code: exit.code, signal: exit.signal };

  return {
    command: [...argv],
    exitCode: timedOut ? timeoutExitCode : facts.code,
    signal: facts.signal,
    timedOut,
    cancelled,
    durationMs: Math.round(performance.now() - started),
    outputTail: boundTail(output, tailBytes, { dropped }),
    ...(startError ? { spawnError: String(startError.message || 'could not start').split('\n')[0] } : {}),
    ...(strays > 0 ? { strays } : {}),
  };
}

/**
 * Something that runs a program the way {@link runProcess} does: `runProcess` itself, or a
 * sandbox bound to one job's working copy. Agents and verification steps take one, so the
 * pipeline decides where they run.
 */
export type ProcessRunner = (argv: readonly string[], options: RunProcessOptions) => Promise<ProcessResult>;
