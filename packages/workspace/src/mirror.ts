import { createHash } from 'node:crypto';
import { access, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import { guardConfigFile, mirrorConfigRules, mirrorFetchRefspec, mirrorWorktreeRules } from './config-guard.js';
import { lastObjectId, type Git } from './git.js';
import { lock, newHolder, unlock } from './lock-file.js';
import { keepContentRaw } from './raw-content.js';
import { removeTree } from './remove-tree.js';
import { sweepTempObjects } from './temp-objects.js';

/** Where the mirror of `url` lives and which lock guards it. */
export interface MirrorPaths {
  /** sha1 of the URL: names the mirror and the pool of working copies of that repository. */
  hash: string;
  dir: string;
  lock: string;
}

/** Paths of the mirror of `url` under `cacheDir`. */
export function mirrorPaths(cacheDir: string, url: string): MirrorPaths {
  const hash = createHash('sha1').update(url).digest('hex');
  const dir = join(cacheDir, 'mirrors', `${hash}.git`);
  return { hash, dir, lock: `${dir}.lock` };
}

/** The commits a job's working copy starts from, read from a freshly fetched mirror. */
export interface MirrorHeads {
  baseBranch: string;
  baseSha: string;
  /** Head of `origin/<branch>` when the work branch already exists on the remote. */
  existingRemoteSha?: string;
  /** Where the work forked from the base: what "changed vs. the base" is measured against. */
  forkSha: string;
}

/** Inputs of {@link syncMirror}. */
export interface SyncRequest {
  url: string;
  branch: string;
  baseBranch?: string | undefined;
  /** A commit to start from instead of the base branch's head (a pinned job). */
  baseCommit?: string | undefined;
  signal?: AbortSignal | undefined;
  lockTimeoutMs: number;
}

/**
 * Creates the mirror of `url` if needed, fetches it (`--prune`) and reads the heads the job
 * starts from, all under the mirror's lock so concurrent jobs (in any process on this host)
 * never fetch into it at the same time.
 *
 * The mirror is a bare repository whose remote branches live under `refs/remotes/origin/*`
 * rather than a `clone --mirror` (which maps them onto `refs/heads/*`): `refs/heads/*` hold
 * the work branches of the working copies, which a pruning fetch must never touch.
 */
export async function syncMirror(
  gits: { local: Git; remote: Git },
  paths: MirrorPaths,
  request: SyncRequest,
): Promise<MirrorHeads> {
  const { signal } = request;
  const git = gits.local;
  await mkdir(join(paths.dir, '..'), { recursive: true });
  const holder = newHolder();
  await lock(paths.lock, holder, { signal, timeoutMs: request.lockTimeoutMs, what: `the mirror lock ${paths.lock}` });
  try {
    if (!(await exists(join(paths.dir, 'config')))) await createMirror(git, paths, request.url, signal);
    // Whatever an agent of an earlier job wrote into the shared config stays out of the fetch.
    await guardMirrorConfig(git, paths.dir, request.url, signal);
    await sweepTempObjects(paths.dir).catch(() => undefined);
    await gits.remote.run(['fetch', '--prune', '--no-tags', '--quiet', 'origin'], { cwd: paths.dir, signal });
    await refuseEmpty(git, paths.dir, signal);
    const baseBranch = request.baseBranch ?? (await defaultBranch(gits, paths.dir, signal));
    const branchHead = await remoteHead(git, paths.dir, baseBranch, signal);
    if (branchHead === undefined) {
      throw new CodefleetError('git_failed', `base branch "${baseBranch}" does not exist on the remote`, {
        verdict: 'permanent',
      });
    }
    const baseSha =
      request.baseCommit === undefined ? branchHead : await pinnedCommit(gits, paths.dir, request.baseCommit, signal);
    const existingRemoteSha = await remoteHead(git, paths.dir, request.branch, signal);
    if (existingRemoteSha === undefined) return { baseBranch, baseSha, forkSha: baseSha };
    const mergeBase = await git.run(['merge-base', baseSha, existingRemoteSha], {
      cwd: paths.dir,
      signal,
      okExitCodes: [1],
    });
    return { baseBranch, baseSha, existingRemoteSha, forkSha: lastObjectId(mergeBase.output) ?? baseSha };
  } finally {
    await unlock(paths.lock, holder);
  }
}

/**
 * The pinned commit `sha`, fetched by its id when no branch of the remote reaches it (GitHub
 * and git's own protocol v2 serve any commit they hold); refused, permanently, when the
 * remote does not have it.
 */
async function pinnedCommit(
  gits: { local: Git; remote: Git },
  dir: string,
  sha: string,
  signal: AbortSignal | undefined,
): Promise<string> {
  const present = async () =>
    (await gits.local.run(['cat-file', '-e', `${sha}^{commit}`], { cwd: dir, signal, okExitCodes: [1, 128] }))
      .exitCode === 0;
  if (await present()) return sha;
  await gits.remote.run(['fetch', '--no-tags', '--quiet', 'origin', sha], { cwd: dir, signal, okExitCodes: [1, 128] });
  if (await present()) return sha;
  throw new CodefleetError('git_failed', `base commit ${sha} is not in the repository`, { verdict: 'permanent' });
}

/**
 * Brings the mirror's config (shared by its working copies) and its own per-worktree config
 * back to what {@link createMirror} wrote (see config-guard.ts), and its attributes file to
 * one that converts nothing (see raw-content.ts). Call it holding the lock. Resolves to the
 * keys it removed or reset (`info/attributes` when that file was rewritten).
 */
export async function guardMirrorConfig(git: Git, dir: string, url: string, signal?: AbortSignal): Promise<string[]> {
  return [
    ...(await guardConfigFile(git, join(dir, 'config'), mirrorConfigRules(url), signal)),
    ...(await guardConfigFile(git, join(dir, 'config.worktree'), mirrorWorktreeRules, signal)),
    ...((await keepContentRaw(dir)) ? ['info/attributes'] : []),
  ];
}

/** Runs `fn` in the mirror under its lock (the sweeper's `git worktree prune`). */
export async function withMirrorLock<T>(paths: MirrorPaths, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const holder = newHolder();
  await lock(paths.lock, holder, { timeoutMs, what: `the mirror lock ${paths.lock}` });
  try {
    return await fn();
  } finally {
    await unlock(paths.lock, holder);
  }
}

async function createMirror(git: Git, paths: MirrorPaths, url: string, signal: AbortSignal | undefined): Promise<void> {
  // Built under a temporary name and renamed into place, so a crash half-way never leaves
  // something that looks like a usable mirror.
  const temp = `${paths.dir}.tmp-${process.pid}`;
  await removeTree(temp);
  try {
    await git.run(['init', '--quiet', '--bare', temp], { cwd: join(paths.dir, '..'), signal });
    // The URL through git, which quotes it; its default refspec is the mirror's.
    await git.run(['remote', 'add', '--no-tags', 'origin', url], { cwd: temp, signal });
    if (!(await writeMirrorSettings(temp))) await setMirrorSettings(git, temp, signal);
    await rename(temp, paths.dir);
  } catch (error) {
    await removeTree(temp);
    throw error;
  }
}

// Automatic gc while other jobs check out from the mirror buys nothing but risk.
// Per-worktree config, so each working copy carries its own sparse-checkout (exclude
// scope). With it enabled, `core.bare` in the shared config would make every linked
// worktree think it is bare, so it moves to the main worktree's own config.
const mirrorSettings = '[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n[extensions]\n\tworktreeConfig = true\n';

/**
 * Writes the mirror's own settings into the config `git init` and `git remote add` just
 * wrote, byte for byte what the `git config` calls of {@link setMirrorSettings} write (a
 * test compares them), without their seven processes: each forks the worker. Resolves to
 * false, writing nothing, when the file is not the one expected (another git's `init`).
 */
async function writeMirrorSettings(dir: string): Promise<boolean> {
  const config = await readFile(join(dir, 'config'), 'utf8');
  const version = '\trepositoryformatversion = 0\n';
  const bare = '\tbare = true\n';
  // git quotes what it writes: a value never holds a raw newline, so `[` at a line's start opens a section.
  const [core = '', ...rest] = config.split(/^(?=\[)/m);
  const once = (line: string) => core.split(line).length === 2;
  const sections = rest.map((section) => section.slice(0, section.indexOf(']') + 1));
  if (!core.startsWith('[core]\n') || !once(version) || !once(bare) || sections.join() !== '[remote "origin"]')
    return false;
  const remote = rest.join('');
  const shared = core.replace(version, '\trepositoryformatversion = 1\n').replace(bare, '');
  await writeFile(join(dir, 'config'), `${shared}${remote}${mirrorSettings}`);
  await writeFile(join(dir, 'config.worktree'), `[core]\n${bare}`);
  return true;
}

/** The mirror's settings through git, one key at a time. */
async function setMirrorSettings(git: Git, dir: string, signal: AbortSignal | undefined): Promise<void> {
  const config = (key: string, value: string, scope: string[] = []) =>
    git.run(['config', ...scope, key, value], { cwd: dir, signal });
  await config('remote.origin.fetch', mirrorFetchRefspec);
  await config('remote.origin.tagOpt', '--no-tags');
  await config('gc.auto', '0');
  await config('maintenance.auto', 'false');
  await config('core.repositoryformatversion', '1');
  await config('extensions.worktreeConfig', 'true');
  await git.run(['config', '--unset', 'core.bare'], { cwd: dir, signal });
  await config('core.bare', 'true', ['--worktree']);
}

async function defaultBranch(
  gits: { local: Git; remote: Git },
  dir: string,
  signal: AbortSignal | undefined,
): Promise<string> {
  const git = gits.local;
  const read = async () => {
    const { exitCode, output } = await git.run(['symbolic-ref', '--quiet', 'refs/remotes/origin/HEAD'], {
      cwd: dir,
      signal,
      okExitCodes: [1],
    });
    const ref = output.trim().split('\n').at(-1) ?? '';
    return exitCode === 0 && ref.startsWith('refs/remotes/origin/')
      ? ref.slice('refs/remotes/origin/'.length)
      : undefined;
  };
  // Asking the remote costs a round trip, so it happens only when the mirror does not know
  // yet (first fetch) or the branch it knew was deleted (a renamed default branch).
  const known = await read();
  if (known !== undefined && (await remoteHead(git, dir, known, signal)) !== undefined) return known;
  await gits.remote.run(['remote', 'set-head', 'origin', '--auto'], { cwd: dir, signal });
  const asked = await read();
  if (asked === undefined) {
    throw new CodefleetError('git_failed', 'the remote has no default branch (empty repository?); give a base branch', {
      verdict: 'permanent',
    });
  }
  return asked;
}

/**
 * A repository without a single branch (created, never pushed to) has nothing a job could
 * start from, and will not have until someone pushes: permanent, said as such, rather than
 * `set-head`'s "Cannot determine remote HEAD" retried as a transient git failure.
 */
async function refuseEmpty(git: Git, dir: string, signal: AbortSignal | undefined): Promise<void> {
  const { output } = await git.run(['for-each-ref', '--count=2', '--format=%(refname)', 'refs/remotes/origin/'], {
    cwd: dir,
    signal,
  });
  const branches = output
    .split('\n')
    .filter((ref) => ref.startsWith('refs/remotes/origin/') && ref !== 'refs/remotes/origin/HEAD');
  if (branches.length > 0) return;
  throw new CodefleetError(
    'git_failed',
    'the repository is empty: it has no commits and no branch to start from; push a first commit (e.g. a README) to it, then redrive the job',
    {
      verdict: 'permanent',
    },
  );
}

async function remoteHead(
  git: Git,
  dir: string,
  branch: string,
  signal: AbortSignal | undefined,
): Promise<string | undefined> {
  const { exitCode, output } = await git.run(
    ['rev-parse', '--verify', '--quiet', `refs/remotes/origin/${branch}^{commit}`],
    {
      cwd: dir,
      signal,
      okExitCodes: [1],
    },
  );
  return exitCode === 0 ? lastObjectId(output) : undefined;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
