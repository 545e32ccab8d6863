import type { Masker } from './mask.js';
import { formatPretty } from './pretty.js';

/** Anything lines can be written to: `process.stdout`, a file stream, a test buffer. */
export interface LogDestination {
  write(chunk: string): unknown;
}

/** Output format: one JSON object per line, or a readable line for terminals. */
export type LogFormat = 'json' | 'pretty';

/** A {@link LogFormat}, or `auto`: pretty when the destination is a terminal, else JSON. */
export type LogFormatSetting = LogFormat | 'auto';

/**
 * The format lines written to `destination` take: `auto` is pretty on a terminal (a person
 * reads it) and JSON anywhere else (a file, a pipe, a log collector).
 */
export function resolveLogFormat(setting: LogFormatSetting, destination: unknown): LogFormat {
  if (setting !== 'auto') return setting;
  return (destination as { isTTY?: unknown } | undefined)?.isTTY === true ? 'pretty' : 'json';
}

/**
 * Wraps `target` so every line pino serializes is masked just before it is written. Masking
 * the finished line, instead of configuring per-field redaction, catches a secret wherever it
 * ended up: message, nested field, error message or stack, child-logger bindings. Pretty lines
 * are masked both before formatting (to catch JSON-escaped forms) and after.
 */
export function createMaskingDestination(target: LogDestination, mask: Masker, format: LogFormat): LogDestination {
  if (format === 'json') return { write: (line: string) => target.write(mask(line)) };
  return { write: (line: string) => target.write(mask(formatPretty(mask(line)))) };
}
