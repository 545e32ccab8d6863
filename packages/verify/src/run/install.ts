import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { lockfilesOf, managerFiles } from '../plan/package-manager.js';
import { isRepoFile, readRepoFile } from '../plan/repo-file.js';

/**
 * File inside `node_modules` recording the dependency hash it was installed for. The
 * workspace pool keeps `node_modules` between jobs, so a matching stamp lets the next
 * verify skip `npm ci` entirely: that is what makes a pooled copy's second verify fast.
 */
export const installStampFile = '.codefleet-lock-hash';

// Bounds for reading the repository's files; past them the install simply runs every time.
const maxLockfileBytes = 128 * 1024 * 1024;
const maxManifestBytes = 4 * 1024 * 1024;
const maxStampBytes = 1024;

/** Every manager's lockfiles: whichever the repository has, a change to it changes the install. */
const lockfiles = Object.values(lockfilesOf).flat();

// Fields of package.json that change what gets installed.
// Lifecycle scripts npm runs during an install: a change to one changes what the install
// writes into node_modules, so it must make a recorded install stale.
const lifecycleScripts = [
  'preinstall',
  'install',
  'postinstall',
  'prepublish',
  'preprepare',
  'prepare',
  'postprepare',
  'dependencies',
] as const;

const dependencyFields = [
  'dependencies',
  'devDependencies',
  'optionalDependencies',
  'peerDependencies',
  'bundleDependencies',
  'overrides',
  'workspaces',
  // The manager itself and its own fields (pnpm's and yarn's overrides, patches, settings).
  'packageManager',
  'pnpm',
  'resolutions',
] as const;

/** The lockfiles (any manager's) at the root of `workdir`, regular files only. */
async function findLockfiles(workdir: string): Promise<string[]> {
  const found: string[] = [];
  for (const name of lockfiles) if (await isRepoFile(workdir, name)) found.push(name);
  return found;
}

/**
 * sha256 of the lockfiles plus the dependency fields of package.json and the package
 * managers' settings files. The lockfile alone would miss a dependency added to package.json
 * by hand: with it in the hash, the frozen install runs and reports the mismatch, instead of
 * the build failing on a missing module. Undefined when one of the files is there but not
 * readable as a regular file of the copy: such a copy is never taken as freshly installed.
 */
export async function dependencyHash(workdir: string): Promise<string | undefined> {
  const hash = createHash('sha256');
  const found = await findLockfiles(workdir);
  if (found.length === 0) hash.update('lockfile:none\n');
  for (const lockfile of found) {
    hash.update(`lockfile:${lockfile}\n`);
    const file = await readRepoFile(workdir, lockfile, { maxBytes: maxLockfileBytes });
    if (file.status !== 'read') return undefined;
    hash.update(file.content);
  }
  hash.update('\npackage.json:\n');
  const manifestFile = await readRepoFile(workdir, 'package.json', { maxBytes: maxManifestBytes });
  if (manifestFile.status === 'refused') return undefined;
  const text = manifestFile.status === 'read' ? manifestFile.content.toString('utf8') : '';
  try {
    const manifest = JSON.parse(text) as Record<string, unknown>;
    hash.update(JSON.stringify(dependencyFields.map((field) => [field, manifest[field] ?? null])));
    const scripts = (
      typeof manifest.scripts === 'object' && manifest.scripts !== null ? manifest.scripts : {}
    ) as Record<string, unknown>;
    hash.update(JSON.stringify(lifecycleScripts.map((name) => [name, scripts[name] ?? null])));
  } catch {
    // Unparsable: any edit may matter, so hash the text (the install will report the error).
    hash.update(text);
  }
  // The managers' own settings for the install (registry, scripts on or off, hooks, workspaces).
  for (const name of managerFiles) {
    const settings = await readRepoFile(workdir, name, { maxBytes: maxManifestBytes });
    if (settings.status === 'refused') return undefined;
    if (settings.status === 'read') hash.update(`\n${name}:\n${settings.content.toString('utf8')}`);
  }
  return hash.digest('hex');
}

/**
 * True when `node_modules` exists and its stamp matches the current dependency hash. The
 * stamp is read like any file of the copy: install scripts could have made it a FIFO
 * (a plain read would hang) or a symlink.
 */
export async function installIsFresh(workdir: string, stampPath?: string): Promise<boolean> {
  if (stampPath !== undefined) {
    // Kept outside the copy by codefleet: nothing a run writes can forge it.
    if (
      !(await lstat(join(workdir, 'node_modules')).then(
        (info) => info.isDirectory(),
        () => false,
      ))
    )
      return false;
    const recorded = await readInstallRecord(stampPath);
    const hash = await dependencyHash(workdir);
    if (hash === undefined || recorded?.hash !== hash) return false;
    // Everything the install made is still there (a pooled copy keeps exactly these).
    for (const dir of recorded.dirs) {
      if (
        !(await lstat(join(workdir, dir)).then(
          (info) => info.isDirectory(),
          () => false,
        ))
      )
        return false;
    }
    return true;
  }
  const stamp = await readRepoFile(workdir, join('node_modules', installStampFile), { maxBytes: maxStampBytes });
  if (stamp.status !== 'read') return false;
  const hash = await dependencyHash(workdir);
  return hash !== undefined && stamp.content.toString('utf8').trim() === hash;
}

/**
 * Removes the stamp before an install, so an interrupted install is never taken as fresh;
 * with a record outside the copy, every node_modules in the copy goes too, so the record
 * lists only what this install makes (not a directory an agent made beside it).
 */
export async function clearInstallStamp(workdir: string, stampPath?: string): Promise<void> {
  if (stampPath !== undefined) {
    await rm(stampPath, { force: true });
    for (const dir of await findDependencyDirs(workdir)) await rm(join(workdir, dir), { recursive: true, force: true });
  }
  await rm(join(workdir, 'node_modules', installStampFile), { force: true });
}

// O_EXCL with O_CREAT never follows a symlink at the name; O_NOFOLLOW says so twice.
const createOnly = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Records that `node_modules` now matches the dependency hash; call after a successful
 * install. Best effort: a stamp not written only costs a reinstall next time. It is written
 * only into a real `node_modules` directory and never through a symlink, because the
 * install's scripts shape `node_modules` and could aim the write at a file outside the copy.
 */
export async function writeInstallStamp(workdir: string, stampPath?: string, clean = false): Promise<void> {
  const hash = await dependencyHash(workdir);
  if (hash === undefined) return;
  if (stampPath !== undefined) {
    const record: InstallRecord = { hash, dirs: await findDependencyDirs(workdir), clean };
    await writeFile(stampPath, `${JSON.stringify(record)}\n`).catch(() => undefined);
    return;
  }
  const dir = join(workdir, 'node_modules');
  try {
    await mkdir(dir, { recursive: true });
    if (!(await lstat(dir)).isDirectory()) return;
    const path = join(dir, installStampFile);
    await rm(path, { force: true });
    await writeFile(path, `${hash}\n`, { flag: createOnly });
  } catch {
    // Left without a stamp, the next verify installs again.
  }
}

/**
 * What an install step recorded outside the copy: the dependency hash it installed for, and
 * every `node_modules` directory it left (relative, `/`-separated: the root one and those of
 * workspace packages). Only these survive into the next job, and runs see them read-only.
 */
export interface InstallRecord {
  hash: string;
  dirs: string[];
  /**
   * The install ran on the job's base, before any agent run: nothing an agent wrote (a file
   * a lifecycle script runs) shaped it. Only a clean install is kept for the next job.
   */
  clean: boolean;
}

/** Reads an {@link InstallRecord}; undefined when there is none or it is not one. */
export async function readInstallRecord(stampPath: string): Promise<InstallRecord | undefined> {
  try {
    const value = JSON.parse(await readFile(stampPath, 'utf8')) as Partial<InstallRecord>;
    if (typeof value.hash !== 'string' || !Array.isArray(value.dirs)) return undefined;
    const dirs = value.dirs.filter((dir): dir is string => typeof dir === 'string' && isRelativeInside(dir));
    return { hash: value.hash, dirs, clean: value.clean === true };
  } catch {
    return undefined;
  }
}

function isRelativeInside(dir: string): boolean {
  return (
    dir !== '' && !dir.startsWith('/') && dir.split('/').every((part) => part !== '' && part !== '.' && part !== '..')
  );
}

const maxDependencyDirs = 2_000;
const maxDepth = 8;

// The node_modules directories under `root`, not looking inside them, .git or symlinks.
async function findDependencyDirs(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (rel: string, depth: number): Promise<void> => {
    if (depth > maxDepth || found.length >= maxDependencyDirs) return;
    const entries = await readdir(join(root, rel), { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name === '.git') continue;
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.name === 'node_modules') found.push(path);
      else await walk(path, depth + 1);
    }
  };
  await walk('', 0);
  return found.sort();
}
