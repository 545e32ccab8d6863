import { readFileSync } from 'node:fs';

/**
 * The CLI's version, from its package.json: read at run time (the file sits one level above
 * `dist/`), so the number printed is the one npm installed and not a copy that can drift.
 */
export function cliVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version?: unknown;
  };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}
