// Git operations shared by the adapters: every call is an argument array through
// `runProcess` (own process group, killed on timeout or abort, complete environment).
import { tmpdir } from 'node:os';
import { CodefleetError, objectIdPattern, previewValue } from '@codefleet/core';
import { runProcess, type ProcessResult } from '@codefleet/process';
import { gitFailure } from './git-errors.js';
import { taskTrailerKey } from './task-trailer.js';

/** How git is run. */
export interface GitOptions {
  /** The complete environment of git: PATH, HOME, credential settings. Nothing is inherited. */
  env: Readonly<Record<string, string>>;
  /** Per git call. */
  timeoutMs: number;
  /** The git binary; default `git` (looked up on `env.PATH`). */
  gitPath?: string;
}

// runProcess keeps stdout and stderr in one buffer, so every parser below takes only lines
// in exactly the shape git prints on stdout: a warning on stderr is never read as data.
function outputLines(result: ProcessResult): string[] {
  return result.outputTail.split('\n').map((line) => line.replace(/\r$/, ''));
}

async function run(
  options: GitOptions,
  cwd: string,
  args: readonly string[],
  signal?: AbortSignal,
  dieWithParent = false,
): Promise<ProcessResult> {
  return runProcess([options.gitPath ?? 'git', ...args], {
    cwd,
    // Never wait for a password prompt nobody will answer, and read no system config (the
    // calls here carry the token); the caller may still override.
    env: { GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', ...options.env },
    timeoutMs: options.timeoutMs,
    ...(signal === undefined ? {} : { signal }),
    ...(dieWithParent ? { dieWithParent } : {}),
  });
}

async function runOk(
  options: GitOptions,
  operation: string,
  cwd: string,
  args: readonly string[],
  signal?: AbortSignal,
): Promise<ProcessResult> {
  // A call that talks to the remote holds the token in its environment: it dies with the worker.
  const result = await run(options, cwd, args, signal, operation === 'ls-remote');
  if (result.exitCode !== 0) throw gitFailure(operation, result);
  return result;
}

/** The sha of HEAD in `workdir` (a commit; an unborn branch is refused). */
async function headSha(options: GitOptions, workdir: string, signal?: AbortSignal): Promise<string> {
  const result = await runOk(options, 'rev-parse', workdir, ['rev-parse', '--verify', 'HEAD^{commit}'], signal);
  const sha = outputLines(result).find((line) => objectIdPattern.test(line));
  if (sha === undefined) throw new CodefleetError('git_failed', 'git rev-parse printed no commit sha for HEAD');
  return sha;
}

/** `sha` itself, once `gitDir` (a working copy or a bare repository) is known to hold it as a commit. */
async function commitIn(options: GitOptions, gitDir: string, sha: string, signal?: AbortSignal): Promise<string> {
  if (!objectIdPattern.test(sha)) {
    throw new CodefleetError('forge_rejected', `invalid sha ${previewValue(sha)}: expected a full hex object name`);
  }
  const result = await run(options, gitDir, ['rev-parse', '--verify', '--quiet', `${sha}^{commit}`], signal);
  // Exit 1 is rev-parse's "no such commit"; anything else is git failing.
  if (result.exitCode !== 0 && result.exitCode !== 1) throw gitFailure('rev-parse', result);
  if (result.exitCode === 1 || !outputLines(result).includes(sha)) {
    throw new CodefleetError('forge_rejected', `${sha} is not a commit in ${gitDir}`);
  }
  return sha;
}

/** `refs/heads/<name>` → sha for those of `branches` that exist on `remote`. */
export async function remoteBranches(
  options: GitOptions,
  remote: string,
  branches: readonly string[],
  signal?: AbortSignal,
): Promise<Map<string, string>> {
  const refs = branches.map((branch) => `refs/heads/${branch}`);
  // `--` ends options, so a remote can never be read as one.
  const result = await runOk(options, 'ls-remote', tmpdir(), ['ls-remote', '--heads', '--', remote, ...refs], signal);
  const found = new Map<string, string>();
  for (const line of outputLines(result)) {
    // `<sha>\t<ref>`, nothing around it. ls-remote patterns match ref tails
    // (`x/refs/heads/main` too): keep exact names only.
    const [sha, ref, ...rest] = line.split('\t');
    if (sha === undefined || ref === undefined || rest.length > 0 || !objectIdPattern.test(sha) || !refs.includes(ref))
      continue;
    const branch = ref.slice('refs/heads/'.length);
    const seen = found.get(branch);
    if (seen !== undefined && seen !== sha)
      throw new CodefleetError('git_failed', `git ls-remote printed two shas for ${ref}`);
    found.set(branch, sha);
  }
  return found;
}

/** Every ref of `remote` under `prefix` (e.g. `refs/codefleet/pulls/`) → its object id. */
export async function remoteRefs(
  options: GitOptions,
  remote: string,
  prefix: string,
  signal?: AbortSignal,
): Promise<Map<string, string>> {
  const result = await runOk(
    options,
    'ls-remote',
    tmpdir(),
    ['ls-remote', '--refs', '--', remote, `${prefix}*`],
    signal,
  );
  const found = new Map<string, string>();
  for (const line of outputLines(result)) {
    const [sha, ref, ...rest] = line.split('\t');
    if (sha !== undefined && ref?.startsWith(prefix) && rest.length === 0 && objectIdPattern.test(sha))
      found.set(ref, sha);
  }
  return found;
}

/**
 * Creates `ref` on `remote` pointing at `oid` (an object in `gitDir`) only if no such ref
 * exists: `--force-with-lease=<ref>:` sends "must not exist" as the old value, which the
 * receiving side checks under its ref lock, so of several creators on any hosts exactly one
 * wins. `oid` must be unique to this caller: git answers "up to date", before the lease,
 * for a ref that already holds the very object.
 */
export async function createRemoteRef(
  options: GitOptions,
  req: { gitDir: string; remote: string; ref: string; oid: string; signal?: AbortSignal },
): Promise<'created' | 'exists'> {
  const args = [
    'push',
    '--porcelain',
    '--no-verify',
    `--force-with-lease=${req.ref}:`,
    '--',
    req.remote,
    `${req.oid}:${req.ref}`,
  ];
  const result = await run(options, req.gitDir, args, req.signal, true);
  const flag = pushFlag(result, req.oid, req.ref);
  if (result.exitCode === 0 && flag === '*') return 'created';
  if (flag === '!' && /\(stale info\)|already exists|\[rejected\]/.test(result.outputTail)) return 'exists';
  throw gitFailure('push', result);
}

/** Input of {@link pushFenced}. */
export interface PushRequest {
  /** Where git runs: a working copy, or with `sha` any git dir holding that commit (a bare mirror too). */
  workdir: string;
  remote: string;
  branch: string;
  /** The commit to push; default: HEAD of `workdir`. */
  sha?: string;
  /** The remote branch must be at this sha; undefined: it must not exist. */
  expectedSha?: string;
  /** The task the commit publishes: the value of its {@link taskTrailerKey} trailer. */
  task?: string;
  signal?: AbortSignal;
}

/**
 * The porcelain flag of the line `<flag>\t<sha>:<ref>\t<summary>` that reports this push
 * (`=` up to date, `!` rejected, `*` new, ...), or undefined when there is none.
 */
function pushFlag(result: ProcessResult, sha: string, ref: string): string | undefined {
  const reported = `\t${sha}:${ref}\t`;
  return outputLines(result)
    .find((line) => line.slice(1).startsWith(reported))
    ?.charAt(0);
}

/**
 * Pushes `req.sha` (default: HEAD of `workdir`) to `refs/heads/<branch>` with
 * `--force-with-lease=<ref>:<expected>`. Git's documented semantics: the ref is updated
 * only if it currently equals `<expected>`, and an empty `<expected>` means it must not
 * exist yet. Git checks "already up to date" before the lease, so re-pushing a sha that
 * already landed succeeds (`updated: false`).
 *
 * A refused push (the lease's `stale info`, a non-fast-forward, or the server's own
 * compare-and-swap lost: "reference already exists", "failed to update ref") fetches the
 * branch and judges its tip ({@link judgeTip}): this commit, or one with exactly its tree,
 * is success with the tip as `sha` (`updated: false`); an earlier attempt's commit of the
 * same task with other content is a `git_conflict` that names it ({@link ownStaleTip}), for
 * the caller to replace under a new lease; anything else is the push's failure, a
 * `git_conflict` whenever the branch is no longer where the lease said.
 *
 * The push dies with this process: one orphaned by a killed worker would keep the
 * forge's credentials in its environment and could land in the middle of the retry's push.
 */
export async function pushFenced(options: GitOptions, req: PushRequest): Promise<{ sha: string; updated: boolean }> {
  // Push a sha, never `HEAD`, so the returned sha is exactly what was pushed even if
  // something moves HEAD meanwhile.
  const sha =
    req.sha === undefined
      ? await headSha(options, req.workdir, req.signal)
      : await commitIn(options, req.workdir, req.sha, req.signal);
  const ref = `refs/heads/${req.branch}`;
  const lease = `--force-with-lease=${ref}:${req.expectedSha ?? ''}`;
  // --no-verify: a pre-push hook is code from the working copy (an agent could plant
  // one) and must not run with the credentials a push holds.
  const args = ['push', '--porcelain', '--no-verify', lease, '--', req.remote, `${sha}:${ref}`];
  const result = await run(options, req.workdir, args, req.signal, true);
  const flag = pushFlag(result, sha, ref);
  if (result.exitCode === 0) return { sha, updated: flag !== '=' };
  const failure = gitFailure('push', result);
  if (flag !== '!') throw failure;
  // The push's own failure says more than a failed second look.
  const tip = await fetchTip(options, req.workdir, req.remote, req.branch, req.signal).catch(() => undefined);
  if (tip === undefined) throw failure;
  const verdict = await judgeTip(options, req.workdir, { ours: sha, tip, task: req.task }, req.signal).catch(
    () => undefined,
  );
  if (verdict === undefined) throw failure;
  if (verdict === 'same' || verdict === 'same_tree') return { sha: tip, updated: false };
  const details = { ...failure.details, remote_sha: tip };
  if (verdict === 'own_task') {
    const message = `git push failed: ${req.branch} holds ${tip}, an earlier attempt's commit of this task with other content`;
    throw new CodefleetError('git_conflict', message, { details: { ...details, own_task: true }, cause: failure });
  }
  // A server-side refusal ("reference already exists") on a branch that moved away from the
  // lease is the same fact as the lease's `stale info`: somebody else published first.
  if (failure.code === 'forge_rejected' && tip !== req.expectedSha) {
    throw new CodefleetError('git_conflict', failure.message, { details, cause: failure });
  }
  throw failure;
}

/**
 * The remote branch's tip after a refused push, fetched into `gitDir` (into FETCH_HEAD, no
 * branch is written) so its tree and message can be read; undefined when the branch is absent.
 */
async function fetchTip(
  options: GitOptions,
  gitDir: string,
  remote: string,
  branch: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  // No hooks: `gitDir` may be a working copy an agent wrote in. Dies with the worker: it holds the token.
  const fetched = await run(
    options,
    gitDir,
    [
      '-c',
      'core.hooksPath=/dev/null',
      'fetch',
      '--quiet',
      '--no-tags',
      '--no-recurse-submodules',
      '--',
      remote,
      `refs/heads/${branch}`,
    ],
    signal,
    true,
  );
  if (fetched.exitCode !== 0) return undefined;
  const result = await run(options, gitDir, ['rev-parse', '--verify', '--quiet', 'FETCH_HEAD^{commit}'], signal);
  return result.exitCode === 0 ? outputLines(result).find((line) => objectIdPattern.test(line)) : undefined;
}

/** How a branch's tip relates to the commit a refused push carried. */
export type TipVerdict =
  /** The very commit: an earlier push of it won the race. */
  | 'same'
  /**
   * Another commit with exactly the pushed tree: the content this push's caller verified is
   * what the branch holds. Usually an earlier attempt of the same task (same agent output, a
   * different commit time); a commit of somebody else with the same tree is accepted too,
   * which is harmless: what is published is still exactly what was verified.
   */
  | 'same_tree'
  /**
   * Other content, but every commit the branch has beyond the pushed one names this task in
   * its trailer: an earlier attempt's work, which the lease holder of the task may replace.
   */
  | 'own_task'
  /** Anything else: somebody else's work, never overwritten. */
  | 'foreign';

/** Judges `tip` against `ours`; both must be commits in `gitDir`. */
export async function judgeTip(
  options: GitOptions,
  gitDir: string,
  commits: { ours: string; tip: string; task?: string | undefined },
  signal?: AbortSignal,
): Promise<TipVerdict> {
  const { ours, tip, task } = commits;
  if (tip === ours) return 'same';
  if (!objectIdPattern.test(ours) || !objectIdPattern.test(tip)) return 'foreign';
  const trees = await runOk(options, 'rev-parse', gitDir, ['rev-parse', `${ours}^{tree}`, `${tip}^{tree}`], signal);
  const [ourTree, tipTree, ...extra] = outputLines(trees).filter((line) => objectIdPattern.test(line));
  if (ourTree === undefined || tipTree === undefined || extra.length > 0) {
    throw new CodefleetError('git_failed', 'git rev-parse printed no trees');
  }
  if (ourTree === tipTree) return 'same_tree';
  if (task === undefined) return 'foreign';
  // What replacing the tip would drop: the commits reachable from it and not from ours.
  const format = `--format=%H%x09%(trailers:key=${taskTrailerKey},valueonly,separator=%x2C)`;
  const log = await runOk(
    options,
    'log',
    gitDir,
    ['log', '--no-show-signature', format, `${ours}..${tip}`, '--'],
    signal,
  );
  const dropped = outputLines(log)
    .map((line) => line.split('\t'))
    .filter((fields) => fields.length === 2 && objectIdPattern.test(fields[0] ?? ''));
  // A tip that is an ancestor of ours is no attempt's commit: the lease's refusal stands.
  if (dropped.length === 0) return 'foreign';
  return dropped.every(([, values]) => values === task) ? 'own_task' : 'foreign';
}

/**
 * The tip a refused push found to be an earlier attempt's commit of the same task (see
 * {@link pushFenced}), or undefined for any other error. Matched by code and details, so an
 * error from another copy of this package counts too.
 */
export function ownStaleTip(error: unknown): string | undefined {
  const { code, details } = (error ?? {}) as { code?: unknown; details?: { own_task?: unknown; remote_sha?: unknown } };
  if (code !== 'git_conflict' || details?.own_task !== true || typeof details.remote_sha !== 'string') return undefined;
  return objectIdPattern.test(details.remote_sha) ? details.remote_sha : undefined;
}
