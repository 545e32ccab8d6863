import { randomBytes } from 'node:crypto';
import { copyFile, lstat, mkdir, readFile, realpath, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { historyDir } from './history.js';
import { installRecords } from './install-records.js';
import { lastObjectId, type Git } from './git.js';
import { removeTree } from './remove-tree.js';

/** A host path shown to a sandboxed run at `target` (the same shape as the sandbox's mounts). */
export interface ViewMount {
  source: string;
  target: string;
  writable: boolean;
}

/**
 * What a sandboxed run of one job may see of its working copy and write there. The copy's
 * own git directory lives in the shared mirror (`<mirror>/worktrees/<name>`), next to the
 * refs, objects and config every other job and the publisher read, so runs never see it:
 * in its place they get a git directory of their own, made for the job, whose objects
 * come read-only from the mirror (an alternate). The agent's git works as usual (status,
 * diff, even commit); nothing it does there reaches the mirror, and the publisher reads the
 * copy's files, never this directory.
 */
export interface AgentView {
  /** The working copy: what runs may write. */
  writable: string[];
  /** Parts of the copy every run sees read-only (workflow files, the read scope, dependencies). */
  readOnly: string[];
  /** The same for install steps: dependencies are theirs to write. */
  installReadOnly: string[];
  mounts: ViewMount[];
  /** The same for install steps: no scratch caches over `node_modules`, which they replace whole. */
  installMounts: ViewMount[];
}

/** How a job's view is built for one run. */
export interface AgentViewOptions {
  /** Parts of the copy shown read-only (workflow files, the read scope). */
  readOnly?: readonly string[] | undefined;
  /**
   * Whether the sandbox can show a host path at another path (bwrap, containers: true, the
   * default). Seatbelt cannot: there the job's git directory stays where it is, the copy's
   * `.git` link points at it for the run, and the scratch caches are left out.
   */
  remap?: boolean | undefined;
}

/** Dependency directories only install steps write: other runs see them read-only. */
export const installedDirs = ['node_modules'] as const;

// Caches tools keep inside node_modules (babel-loader, vite): each job gets empty ones of its
// own on top of the read-only dependencies, so nothing written there reaches another job.
const dependencyCaches = ['.cache', '.vite'];

/** Where a copy's per-job git directory and scratch caches live: beside the copy, in the pool. */
export function viewDir(copyDir: string): string {
  return `${copyDir}.view`;
}

/**
 * Builds the job's view of its copy: a git directory of its own (HEAD on `branch` at the
 * copy's commit, the copy's index and sparse patterns, the mirror's objects as an
 * alternate) and the scratch caches. Made afresh on every call.
 */
export async function buildAgentView(
  git: Git,
  opts: {
    copyDir: string;
    gitDir: string;
    mirrorDir: string;
    branch: string;
    readOnly: readonly string[];
    installStamp: string;
    signal?: AbortSignal | undefined;
    /** See {@link AgentViewOptions.remap}. */
    remap?: boolean | undefined;
    /** The objects runs read: a pinned job's own history (see history.ts); default the mirror's. */
    objectsDir?: string | undefined;
  },
): Promise<AgentView> {
  const root = viewDir(opts.copyDir);
  await removeTree(root);
  const own = join(root, 'git');
  const objectsDir = opts.objectsDir ?? join(opts.mirrorDir, 'objects');
  await writeOwnGitDir(git, own, { ...opts, objectsDir });

  const installedReadOnly: string[] = [];
  const objects: ViewMount = { source: objectsDir, target: objectsDir, writable: false };
  const remap = opts.remap ?? true;
  // Without remapping, the copy's `.git` link points at the job's own directory for the run
  // (put back by restoreGitLink afterwards), and that directory is writable where it is.
  if (!remap) await ensureContent(join(opts.copyDir, '.git'), `gitdir: ${own}\n`);
  const gitMounts: ViewMount[] = [{ source: own, target: remap ? opts.gitDir : own, writable: true }, objects];
  const mounts = [...gitMounts];
  // Every dependency directory the last install recorded (workspace packages' too), and the
  // root one whatever made it: none is writable outside install steps.
  const recorded = (await (await installRecords()).readInstallRecord(opts.installStamp))?.dirs ?? [];
  for (const dir of new Set([...recorded, ...installedDirs].map((rel) => join(opts.copyDir, rel)))) {
    if (await isDirectory(dir)) installedReadOnly.push(dir);
  }
  // Scratch caches need a mount over the read-only dependencies: without remapping, tools
  // find their caches read-only (and work without them) rather than shared with later jobs.
  if (remap) mounts.push(...(await scratchCacheMounts(opts.copyDir, root)));
  const readOnly = [];
  for (const path of opts.readOnly) if (await exists(path)) readOnly.push(path);
  return {
    writable: [opts.copyDir],
    readOnly: [...readOnly, ...installedReadOnly],
    installReadOnly: readOnly,
    mounts,
    installMounts: gitMounts,
  };
}

/**
 * Writes the job's own git directory `own`: HEAD on the branch at the copy's commit, the
 * copy's index and sparse patterns, `objectsDir` (the mirror's objects, or a pinned job's
 * history) as an alternate.
 */
async function writeOwnGitDir(
  git: Git,
  own: string,
  opts: { copyDir: string; gitDir: string; objectsDir: string; branch: string; signal?: AbortSignal | undefined },
): Promise<void> {
  await mkdir(join(own, 'objects', 'info'), { recursive: true });
  await mkdir(join(own, 'info'), { recursive: true });
  const head = lastObjectId((await git.run(['rev-parse', 'HEAD'], { cwd: opts.copyDir, signal: opts.signal })).output);
  const ref = join(own, 'refs', 'heads', ...opts.branch.split('/'));
  await mkdir(dirname(ref), { recursive: true });
  if (head !== undefined) await writeFile(ref, `${head}\n`);
  await mkdir(join(own, 'refs', 'tags'), { recursive: true });
  await writeFile(join(own, 'HEAD'), `ref: refs/heads/${opts.branch}\n`);
  await writeFile(join(own, 'objects', 'info', 'alternates'), `${await realpath(opts.objectsDir)}\n`);
  const sparse = await readFile(join(opts.gitDir, 'info', 'sparse-checkout'), 'utf8').catch(() => undefined);
  await writeFile(
    join(own, 'config'),
    [
      '[core]',
      '\trepositoryformatversion = 0',
      '\tfilemode = true',
      '\tbare = false',
      '\tlogallrefupdates = true',
      ...(sparse === undefined ? [] : ['\tsparseCheckout = true']),
      '',
    ].join('\n'),
  );
  if (sparse !== undefined) await writeFile(join(own, 'info', 'sparse-checkout'), sparse);
  await copyFile(join(opts.gitDir, 'index'), join(own, 'index')).catch(() => undefined);
}

/** A scratch directory per dependency cache under `root`, each mounted over its place in the installed directories. */
async function scratchCacheMounts(copyDir: string, root: string): Promise<ViewMount[]> {
  const mounts: ViewMount[] = [];
  for (const name of installedDirs) {
    const dir = join(copyDir, name);
    if (!(await isDirectory(dir))) continue;
    for (const cache of dependencyCaches) {
      const scratch = join(root, 'caches', name, cache);
      await mkdir(scratch, { recursive: true });
      // The mount point: made by codefleet, once, inside the installed directory.
      if (
        await mkdir(join(dir, cache), { recursive: true }).then(
          () => true,
          () => false,
        )
      ) {
        mounts.push({ source: scratch, target: join(dir, cache), writable: true });
      }
    }
  }
  return mounts;
}

/**
 * Puts the copy's link to its git directory back: `<copy>/.git` as the file `git worktree`
 * wrote, and the worktree directory's `gitdir` and `commondir`. A run can replace `.git`
 * with a directory of its own making (a config whose filter or fsmonitor would then run in
 * codefleet's own git calls, outside the sandbox); this undoes it before any of them.
 */
export async function restoreGitLink(copyDir: string, gitDir: string): Promise<void> {
  // Gone: the sweeper took the copy (its lock was broken); nothing here is ours to repair.
  if (!(await isDirectory(gitDir))) return;
  const link = join(copyDir, '.git');
  const info = await lstat(link).catch(() => undefined);
  if (info !== undefined && !info.isFile()) await removeTree(link);
  await ensureContent(link, `gitdir: ${gitDir}\n`);
  await ensureContent(join(gitDir, 'gitdir'), `${link}\n`);
  await ensureContent(join(gitDir, 'commondir'), '../..\n');
}

// Written only when different, and by rename: a fetch in the mirror reads every worktree's
// `commondir` and must never see it half-written.
async function ensureContent(path: string, content: string): Promise<void> {
  const info = await lstat(path).catch(() => undefined);
  // Small, or not ours: a run could leave a huge file here.
  if (info?.isFile() && info.size < 4096 && (await readFile(path, 'utf8').catch(() => undefined)) === content) return;
  // A fresh random name, created exclusively: a run that can predict a name could have put
  // a symlink there, and a plain write would follow it out of the copy.
  const temp = `${path}.codefleet-${randomBytes(8).toString('hex')}.tmp`;
  await writeFile(temp, content, { flag: 'wx' });
  if (info !== undefined && !info.isFile()) await removeTree(path);
  await rename(temp, path);
}

/** Removes the job's view (its git directory and scratch caches) and a pinned job's history. */
export async function removeAgentView(copyDir: string): Promise<void> {
  await removeTree(viewDir(copyDir));
  await removeTree(historyDir(copyDir));
}

async function isDirectory(path: string): Promise<boolean> {
  return lstat(path).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}
