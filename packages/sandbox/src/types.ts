import { SANDBOX_MODES } from '@codefleet/config';
import type { NetworkRefusal, ProcessResult, RunProcessOptions } from '@codefleet/process';
import type { NetworkMode, NetworkPolicy } from './network/policy.js';

/**
 * How agents and repository commands are isolated from the worker:
 * - `bwrap`: bubblewrap on Linux: own PID, IPC, UTS and network namespaces (the network
 *   reached only through the worker's proxy), a filesystem made of read-only system
 *   directories, the job's working copy and a fresh HOME and /tmp; nothing else of the host
 *   is there; processes, memory and tmpfs sizes bounded per run;
 * - `sandbox-exec`: macOS Seatbelt: the same read and write rules as a profile; macOS has no
 *   PID namespace, so processes are confined by the profile's signal and process-info rules;
 * - `container`: docker or podman, for hosts that prefer them;
 * - `none`: no isolation; the program runs as the worker's user with its HOME and view of
 *   every process and file (said plainly at start and by `doctor`).
 */
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** Every mode, `auto` apart: config.yaml's `sandbox.mode` choices. */
export const sandboxModes: readonly SandboxMode[] = SANDBOX_MODES;

/** What the operator chose (config.yaml `sandbox:`), resolved to host paths. */
export interface SandboxSettings {
  /** `auto`: bwrap on Linux, sandbox-exec on macOS. */
  mode: SandboxMode | 'auto';
  /** What runs may reach: through a proxy that enforces it, or nothing. */
  network: NetworkPolicy;
  /** What one run may use; {@link defaultLimits} when not given. */
  limits?: SandboxLimits;
  /** Host paths shown read-only besides the system directories: toolchains installed elsewhere. */
  readPaths: readonly string[];
  /**
   * Host paths never shown, even under a directory that is: the worker's data directory (other
   * working copies, mirrors, the queue), its config file, token and key files, the real HOME.
   * What a run must see of them (its own working copy) is shown again on top.
   */
  hiddenPaths: readonly string[];
  /** Where each run's fresh HOME and /tmp are made and removed again (inside the data directory). */
  runRoot: string;
  /** For `container`: the runtime and the image runs start from. */
  container?: { runtime: 'docker' | 'podman'; image: string };
}

/**
 * What one run may use (config.yaml `sandbox.limits`). The defaults are far above what an
 * `npm ci && npm test` of a mid-sized repository uses, and far below what takes a host down.
 */
export interface SandboxLimits {
  /** Processes (and threads' processes) alive at once in the run. */
  processes: number;
  /** Resident memory of all the run's processes together. */
  memoryMb: number;
  /** Size of the run's /tmp (a tmpfs, in RAM; HOME is inside it). */
  tmpMb: number;
  /** Files and directories in the run's /tmp. */
  tmpFiles: number;
  /** Size of the run's /dev/shm. */
  shmMb: number;
  /** Open files per process. */
  openFiles: number;
  /** CPU time per process. */
  cpuSeconds: number;
  /** Largest file a process may write. */
  fileSizeMb: number;
}

/** The limits a run gets unless `sandbox.limits` says otherwise. */
export const defaultLimits: SandboxLimits = {
  processes: 512,
  memoryMb: 8192,
  tmpMb: 4096,
  tmpFiles: 500_000,
  shmMb: 512,
  openFiles: 8192,
  cpuSeconds: 7200,
  fileSizeMb: 4096,
};

/** A host path shown inside the sandbox at `target` (the agent's own git directory over the shared one). */
export interface SandboxMount {
  source: string;
  target: string;
  writable: boolean;
}

/** What one isolating run is laid out as, whatever the mode builds from it; paths absolute. */
export interface RunLayout {
  /** The run's own directory (its HOME and /tmp). */
  runDir: string;
  writable: readonly string[];
  readOnly: readonly string[];
  mounts: readonly SandboxMount[];
  cwd: string;
  network: NetworkMode;
}

/** One run: the process options plus what it may see and write. */
export interface SandboxRunOptions extends Omit<RunProcessOptions, 'dieWithParent'> {
  /** Host paths the run may write (the working copy); `cwd` must be inside one. Shown at the same path. */
  writable: readonly string[];
  /**
   * Paths inside the writable ones shown read-only: workflow files, dependencies written only
   * by install steps, the read scope. Missing ones are skipped.
   */
  readOnly?: readonly string[];
  /** Extra mounts, applied after `readOnly`. */
  mounts?: readonly SandboxMount[];
  /**
   * Directories inside the read-only paths that tools write in real life (vite's
   * `node_modules/.vite-temp`, `node_modules/.cache`): each run gets an empty writable
   * directory of its own at each, applied last and removed after the run, so tools start
   * and nothing they write there reaches the copy or the next run. A missing one is made,
   * empty, as the mount point. Modes that can show a path elsewhere only (bwrap,
   * containers); under Seatbelt they stay read-only, and `none` writes the copy anyway.
   */
  scratch?: readonly string[];
  /** Told of each destination the network policy refused, as it happens (the job's log line and metric). */
  onNetworkRefused?: (refusal: NetworkRefusal) => void;
}

/**
 * The sandbox port: runs one program with an argument array (never a shell string), cut off
 * from the host as its mode allows. Every mode promises what `runProcess` does (complete
 * environment, process-group timeouts, bounded output, nothing outlives a killed worker);
 * the isolating modes add, per run:
 * - its own process namespace where the OS has one (Linux): the worker, other jobs and their
 *   environments are invisible, and everything started inside dies with the run;
 * - a fresh HOME and TMPDIR, removed after the run;
 * - writes only to `writable` (minus `readOnly`), the run's own `scratch` directories and
 *   its own HOME and /tmp;
 * - reads only of system directories, `readPaths`, and what it may write; `hiddenPaths` never;
 * - the network only through a proxy that enforces `network` (refusals are reported in the
 *   result's `networkRefusals`), or none;
 * - the limits of `limits` where the mode can enforce them (bwrap; the result's
 *   `resourceLimit` names the one a run went past).
 * A program that cannot be found, or lies outside what the run can see, is reported as a
 * `spawnError` naming the fix, as a program missing on PATH is.
 *
 * It leaves out what the caller decides: which paths are writable or read-only for which
 * run, and the environment allowlist.
 */
export interface Sandbox {
  readonly mode: SandboxMode;
  /**
   * Whether a mount may show a host path at another path (bwrap, containers). Seatbelt only
   * allows or denies paths where they are: its runs refuse mounts whose source and target differ.
   */
  readonly remapsPaths: boolean;
  /** One line for the worker's start and `doctor`: what this mode isolates, or exposes. */
  readonly description: string;
  run(argv: readonly string[], options: SandboxRunOptions): Promise<ProcessResult>;
}
