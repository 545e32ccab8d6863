import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * File inside `node_modules` recording the dependency hash it was installed for. The
 * workspace pool keeps `node_modules` between jobs, so a matching stamp lets the next
 * verify skip `npm ci` entirely: that is what makes a pooled copy's second verify fast.
 */
export const installStampFile = '.codefleet-lock-hash';

/** Lockfiles `npm ci` reads, in npm's order of preference. */
const lockfiles = ['npm-shrinkwrap.json', 'package-lock.json'] as const;

// Fields of package.json that change what gets installed.
const dependencyFields = [
  'dependencies',
  'devDependencies',
  'optionalDependencies',
  'peerDependencies',
  'bundleDependencies',
  'overrides',
  'workspaces',
] as const;

/** The lockfile npm would use in `workdir`, or undefined. */
export async function findLockfile(workdir: string): Promise<string | undefined> {
  for (const name of lockfiles) {
    if (await isFile(join(workdir, name))) return name;
  }
  return undefined;
}

/**
 * sha256 of the lockfile plus the dependency fields of package.json. The lockfile alone
 * would miss a dependency added to package.json by hand: with it in the hash, `npm ci`
 * runs and reports the mismatch, instead of the build failing on a missing module.
 */
export async function dependencyHash(workdir: string): Promise<string> {
  const hash = createHash('sha256');
  const lockfile = await findLockfile(workdir);
  hash.update(`lockfile:${lockfile ?? 'none'}\n`);
  if (lockfile !== undefined) hash.update(await readFile(join(workdir, lockfile)));
  hash.update('\npackage.json:\n');
  const text = await readFile(join(workdir, 'package.json'), 'utf8').catch(() => '');
  try {
    const manifest = JSON.parse(text) as Record<string, unknown>;
    hash.update(JSON.stringify(dependencyFields.map((field) => [field, manifest[field] ?? null])));
  } catch {
    // Unparsable: any edit may matter, so hash the text (the install will report the error).
    hash.update(text);
  }
  return hash.digest('hex');
}

/** True when `node_modules` exists and its stamp matches the current dependency hash. */
export async function installIsFresh(workdir: string): Promise<boolean> {
  const stamp = await readFile(join(workdir, 'node_modules', installStampFile), 'utf8').catch(() => undefined);
  return stamp !== undefined && stamp.trim() === (await dependencyHash(workdir));
}

/** Removes the stamp before an install, so an interrupted install is never taken as fresh. */
export async function clearInstallStamp(workdir: string): Promise<void> {
  await rm(join(workdir, 'node_modules', installStampFile), { force: true });
}

/** Records that `node_modules` now matches the dependency hash; call after a successful install. */
export async function writeInstallStamp(workdir: string): Promise<void> {
  const dir = join(workdir, 'node_modules');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, installStampFile), `${await dependencyHash(workdir)}\n`);
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
