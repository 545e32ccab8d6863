import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import { fsProblem } from './fs-problem.js';

/**
 * The text of a secret file this host keeps (the fleet key, the dashboard's generated
 * token); undefined when there is no such file. `what` names it in errors ("the fleet key file").
 */
export function readSecretFile(path: string, what: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CodefleetError('invalid_config', `${what} ${path} cannot be read: ${fsProblem(error)}`, { cause: error });
  }
}

/**
 * Makes a secret file holding `text`, mode 0600 in a directory made 0700; when another
 * process made it first, that one's text is kept, so two processes starting at once end
 * with the same secret. The text is written to a private temporary file and linked into
 * place, so no process ever reads a file that is there but not yet written.
 */
export function createSecretFile(path: string, text: string, what: string): { text: string; created: boolean } {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(temporary, text, { mode: 0o600, flag: 'wx' });
    linkSync(temporary, path);
    return { text, created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST')
      return { text: readSecretFile(path, what) ?? '', created: false };
    throw new CodefleetError('invalid_config', `${what} ${path} cannot be made: ${fsProblem(error)}`, {
      cause: error,
    });
  } finally {
    rmSync(temporary, { force: true });
  }
}
