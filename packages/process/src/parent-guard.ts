import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/**
 * The guard, run as `node -e <guardSource> <parent pid> <file> <args...>` at the head of a
 * guarded child's process group. It starts the real program in the same group, passes its
 * exit on (code, or the same signal), and kills the whole group as soon as the parent is
 * gone: a worker killed with SIGKILL cannot stop its agent itself, and an orphaned agent
 * would keep writing into a working copy the next job reuses. Polling the parent works the
 * same on Linux and macOS, which have no common parent-death signal.
 */
export const guardSource = `
const { spawn } = require('node:child_process');
const [parentPid, file, ...args] = process.argv.slice(1);
const parent = Number(parentPid);
const child = spawn(file, args, { stdio: 'inherit' });
const killGroup = () => { try { process.kill(-process.pid, 'SIGKILL'); } catch { process.exit(137); } };
const parentGone = () => {
  if (process.ppid !== parent) return true;
  try { process.kill(parent, 0); return false; } catch (error) { return error.code === 'ESRCH'; }
};
const watch = setInterval(() => { if (parentGone()) killGroup(); }, ${250});
child.on('error', (error) => { process.stderr.write('could not start ' + file + ': ' + error.message + '\\n'); process.exit(127); });
child.on('exit', (code, signal) => {
  clearInterval(watch);
  if (signal) process.kill(process.pid, signal);
  else process.exit(code ?? 1);
});
`;

/** The guarded argument vector for `argv`, run by this Node binary. */
export function guardedArgv(argv: readonly string[], parentPid: number = process.pid): string[] {
  return [process.execPath, '-e', guardSource, String(parentPid), ...argv];
}

/**
 * Where `file` would be started from, or undefined when it cannot be: a bare name is
 * looked up on the child's PATH, a path is taken relative to `cwd`. The guard itself always
 * starts, so a missing program has to be found out before, to report it as not started.
 */
export async function findExecutable(file: string, cwd: string, path: string | undefined): Promise<string | undefined> {
  const candidates = file.includes('/')
    ? [isAbsolute(file) ? file : resolve(cwd, file)]
    : (path ?? '').split(delimiter).filter(Boolean).map((dir) => join(isAbsolute(dir) ? dir : resolve(cwd, dir), file));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Next directory.
    }
  }
  return undefined;
}
