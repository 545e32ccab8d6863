import { InvalidArgumentError } from 'commander';
import type { HostHardware, LoadedConfig } from '@codefleet/config';
import type { Runtime } from '../runtime.js';

/** Where the program writes and how it ends; injected so tests can run it in-process. */
export interface Io {
  out(line: string): void;
  err(line: string): void;
  cwd: string;
  /** The environment; default: the process's, read by the config loader. */
  env?: Record<string, string | undefined>;
  /** The host's hardware for `agents.ollama.model: auto`; default: the config loader probes this host. */
  hardware?: HostHardware;
}

/** What every command group's registration gets from `buildProgram`. */
export interface ProgramContext {
  io: Io;
  /** Loads the config named by `--config` (or the default), with `--log-format` applied. */
  load(): Promise<LoadedConfig>;
  /**
   * Opens the runtime, runs `fn` and closes the runtime; a number `fn` resolves becomes the
   * exit code (`longRunning`: a service such as the worker, see `openRuntime`).
   */
  withRuntime(fn: (rt: Runtime) => Promise<unknown>, options?: { longRunning?: boolean }): Promise<void>;
  /** Sets the process exit code of a command that ends without the runtime. */
  exitWith(code: number): void;
}

// Commands and the runtime are imported when a command runs, not with the program: a
// long-lived `codefleet worker` keeps in memory only what it uses (no producer, patch or
// demo code, no webhook library).
export const commands = {
  chat: () => import('../commands/chat.js'),
  dashboard: () => import('../commands/dashboard.js'),
  demo: () => import('../commands/demo.js'),
  doctor: () => import('../commands/doctor.js'),
  evaluate: () => import('../commands/evaluate.js'),
  evalValidate: () => import('../commands/eval-validate.js'),
  fleet: () => import('../commands/fleet.js'),
  init: () => import('../commands/init.js'),
  jobs: () => import('../commands/jobs.js'),
  patch: () => import('../commands/patch.js'),
  pending: () => import('../commands/pending.js'),
  producer: () => import('../commands/producer.js'),
  serve: () => import('../commands/serve.js'),
  worker: () => import('../commands/worker.js'),
};

/** Parses an option that must be a positive integer. */
export const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a positive integer, got "${value}"`);
  return n;
};

/** Parses an option that must be a port number (0: a free one). */
export const portNumber = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new InvalidArgumentError(`expected a port (0-65535), got "${value}"`);
  return n;
};
