import { lstat, readlink, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, relative } from 'node:path';

/**
 * Linux directories shown read-only: programs, libraries, system configuration and `/opt`
 * toolchains. Everything else of the host (home directories, /tmp, /var, /srv, /root, /run,
 * the worker's data directory) is simply not there.
 */
export const linuxSystemDirs = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/etc',
  '/opt',
  '/nix',
  '/sys',
] as const;

/** A top-level system path as it is on this host: a directory, or a symlink into one (merged /usr). */
export type SystemEntry = { path: string; kind: 'dir' } | { path: string; kind: 'symlink'; target: string };

/** The system directories that exist here, as directories or symlinks. */
export async function systemEntries(paths: readonly string[]): Promise<SystemEntry[]> {
  const entries: SystemEntry[] = [];
  for (const path of paths) {
    const info = await lstat(path).catch(() => undefined);
    if (info?.isSymbolicLink()) entries.push({ path, kind: 'symlink', target: await readlink(path) });
    else if (info?.isDirectory()) entries.push({ path, kind: 'dir' });
  }
  return entries;
}

/**
 * Files under /etc that are often symlinks out of it (systemd-resolved's resolv.conf lives in
 * /run): their real files are shown too, or name resolution fails inside.
 */
export async function etcLinkTargets(): Promise<string[]> {
  const targets: string[] = [];
  for (const file of ['/etc/resolv.conf', '/etc/hosts', '/etc/localtime']) {
    const info = await lstat(file).catch(() => undefined);
    if (!info?.isSymbolicLink()) continue;
    const real = await realpath(file).catch(() => undefined);
    if (real !== undefined && !real.startsWith('/etc/') && !real.startsWith('/usr/')) targets.push(real);
  }
  return targets;
}

/** Whether a process `pid` exists (one of another user's counts too). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True when `path` is `root` or inside it (both absolute and normalised). */
export function isWithin(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** The installation prefix of this Node (`…/bin/node` → `…`), for agents written in Node. */
export function nodePrefix(execPath: string = process.execPath): string {
  return dirname(dirname(execPath));
}

/** The real paths of those of `paths` that exist, each once, in order. */
export async function existingRealPaths(paths: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const path of paths) {
    const real = await realpath(path).catch(() => undefined);
    if (real !== undefined && !found.includes(real)) found.push(real);
  }
  return found;
}
