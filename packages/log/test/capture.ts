import { type CreateLoggerOptions, type Logger, createLogger } from '../src/index.js';

/** A logger writing into an array, plus that array; lines are kept exactly as written. */
export function capture(options: Omit<CreateLoggerOptions, 'destination'> = {}): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = createLogger({ ...options, destination: { write: (chunk: string) => lines.push(chunk) } });
  return { log, lines };
}

/** The single JSON line written so far, parsed. */
export function onlyRecord(lines: readonly string[]): Record<string, unknown> {
  if (lines.length !== 1) throw new Error(`expected one line, got ${lines.length}`);
  return JSON.parse(lines[0] ?? '') as Record<string, unknown>;
}
