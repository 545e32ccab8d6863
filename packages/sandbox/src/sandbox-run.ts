// What every sandbox mode's run shares: the process options it passes on, the run directory,
// and finding the program the run names.
import { access, chmod, mkdir, mkdtemp, readdir, realpath, rm, stat } from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import type { ProcessResult } from '@codefleet/process';
import type { SandboxRunOptions } from './types.js';

export function processOptions(options: SandboxRunOptions) {
  const { writable: _w, readOnly: _r, mounts: _m, scratch: _s, onNetworkRefused: _n, ...rest } = options;
  return rest;
}

// Each run gets its own directory for HOME and /tmp, removed afterwards whatever the run left
// there (read-only directories included).
export async function withRunDir<T>(runRoot: string, fn: (runDir: string) => Promise<T>): Promise<T> {
  const runDir = await mkdtemp(join(runRoot, 'run-'));
  await mkdir(join(runDir, 'home'));
  try {
    return await fn(runDir);
  } finally {
    await removeAll(runDir);
  }
}

async function removeAll(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true, maxRetries: 3 });
  } catch {
    await makeWritable(path);
    await rm(path, { recursive: true, force: true, maxRetries: 3 });
  }
}

async function makeWritable(dir: string): Promise<void> {
  await chmod(dir, 0o700).catch(() => undefined);
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (entry.isDirectory()) await makeWritable(join(dir, entry.name));
  }
}

// Where the program would be started from inside, found here with the same PATH (the paths
// inside are the host's): the first match the sandbox shows. A match it does not show is
// named with the fix, so a toolchain outside the system directories is not a mystery.
export async function locate(
  file: string,
  cwd: string,
  path: string | undefined,
  visible: (real: string) => boolean,
): Promise<{ path: string } | { error: string }> {
  const candidates = file.includes('/')
    ? [isAbsolute(file) ? file : resolve(cwd, file)]
    : (path ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(isAbsolute(dir) ? dir : resolve(cwd, dir), file));
  let hiddenMatch: string | undefined;
  for (const candidate of candidates) {
    if (!(await isExecutableFile(candidate))) continue;
    const real = await realpath(candidate).catch(() => candidate);
    if (visible(real)) return { path: candidate };
    hiddenMatch ??= candidate;
  }
  if (hiddenMatch !== undefined) {
    return {
      error: `${file} is at ${hiddenMatch}, which the sandbox does not show; add its directory (or its toolchain's) to sandbox.read_paths`,
    };
  }
  return { error: `${file}: not found${file.includes('/') ? '' : ' on PATH'}` };
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, fsConstants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

export function notStarted(argv: readonly string[], error: string): ProcessResult {
  return {
    command: [...argv],
    exitCode: null,
    signal: null,
    timedOut: false,
    cancelled: false,
    durationMs: 0,
    outputTail: '',
    spawnError: error,
  };
}
