import { hostname } from 'node:os';
import { type Logger as PinoLogger, pino } from 'pino';
import {
  type LogDestination,
  type LogFormatSetting,
  createMaskingDestination,
  resolveLogFormat,
} from './destination.js';
import { maskSecrets } from './mask.js';
import type { SecretSource } from './secret-registry.js';

/** A pino logger; see {@link createLogger} for the conventions of codefleet's logs. */
export type Logger = PinoLogger;

/** Log levels, most severe first; `silent` writes nothing. */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** Options of {@link createLogger}; all optional, so `createLogger()` logs JSON at info to stdout. */
export interface CreateLoggerOptions {
  /** Minimum level written. Default: `info`. */
  level?: LogLevel;
  /** `json` (default) for machines, `pretty` for a terminal, `auto`: pretty when the destination is a TTY. */
  format?: LogFormatSetting;
  /**
   * Secret values to mask wherever they appear: `LoadedConfig.secrets`, or a
   * `SecretRegistry` holding them, whose later additions (minted tokens) are masked too.
   */
  secrets?: SecretSource;
  /** Logger name, written as `name` on every line. */
  name?: string;
  /** Fields on every line, e.g. `{ worker_id }`; added to pino's `pid` and `hostname`. */
  base?: Record<string, unknown>;
  /** Where lines go. Default: `process.stdout`. */
  destination?: LogDestination;
}

/**
 * Creates the process's logger. Lines are JSON (or pretty) with an ISO `time` and the level
 * as a label (`"level":"info"`), and pass through secret masking as the very last step.
 *
 * Event convention: a line that records something happening carries an `event` field naming
 * it as `<subject>.<past-tense verb>` in snake_case words, e.g. `job.claimed`,
 * `workspace.prepared`, `agent.finished`, `verify.step_failed`, `pr.ensured`, with the facts
 * as further fields (`job_id`, `attempt`, `exit_code`, `duration_ms`) and `msg` as a short
 * human sentence. Filter on `event`, never on `msg`. Errors go in the `err` field
 * (`log.error({ err, event: 'job.failed' }, 'job failed')`) so the stack is kept.
 */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const secrets = options.secrets;
  const mask = (line: string) => maskSecrets(line, secrets);
  const target = options.destination ?? process.stdout;
  const destination = createMaskingDestination(target, mask, resolveLogFormat(options.format ?? 'json', target));
  return pino(
    {
      level: options.level ?? 'info',
      ...(options.name === undefined ? {} : { name: options.name }),
      base: { pid: process.pid, hostname: hostname(), ...options.base },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

/** A logger that writes nothing, for tests and for libraries called without one. */
export function silentLogger(): Logger {
  return pino({ level: 'silent', enabled: false }, { write: () => undefined });
}
