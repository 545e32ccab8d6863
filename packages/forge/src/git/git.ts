// Git operations shared by the adapters: every call is an argument array through
// `runProcess` (own process group, killed on timeout or abort, complete environment).
import { tmpdir } from 'node:os';
import { CodefleetError, previewValue } from '@codefleet/core';
import { runProcess, type ProcessResult } from '@codefleet/process';
import { gitFailure } from './git-errors.js';

/** How git is run. */
export interface GitOptions {
  /** The complete environment of git: PATH, HOME, credential settings. Nothing is inherited. */
  env: Readonly<Record<string, string>>;
  /** Per git call. */
  timeoutMs: number;
  /** The git binary; default `git` (looked up on `env.PATH`). */
  gitPath?: string;
}

const shaPattern = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

// runProcess keeps stdout and stderr in one buffer, so every parser below takes only lines
// in exactly the shape git prints on stdout: a warning on stderr is never read as data.
function outputLines(result: ProcessResult): string[] {
  return result.outputTail.split('\n').map((line) => line.replace(/\r$/, ''));
}

async function run(
  options: GitOptions, cwd: string, args: readonly string[], signal?: AbortSignal, dieWithParent = false,
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

async function runOk(options: GitOptions, operation: string, cwd: string, args: readonly string[], signal?: AbortSignal): Promise<ProcessResult> {
  // A call that talks to the remote holds the token in its environment: it dies with the worker.
  const result = await run(options, cwd, args, signal, operation === 'ls-remote');
  if (result.exitCode !== 0) throw gitFailure(operation, result);
  return result;
}

/** The sha of HEAD in `workdir` (a commit; an unborn branch is refused). */
export async function headSha(options: GitOptions, workdir: string, signal?: AbortSignal): Promise<string> {
  const result = await runOk(options, 'rev-parse', workdir, ['rev-parse', '--verify', 'HEAD^{commit}'], signal);
  const sha = outputLines(result).find((line) => shaPattern.test(line));
  if (sha === undefined) throw new CodefleetError('git_failed', 'git rev-parse printed no commit sha for HEAD');
  return sha;
}

/** `sha` itself, once `gitDir` (a working copy or a bare repository) is known to hold it as a commit. */
async function commitIn(options: GitOptions, gitDir: string, sha: string, signal?: AbortSignal): Promise<string> {
  if (!shaPattern.test(sha)) {
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
export async function remoteBranches(options: GitOptions, remote: string, branches: readonly string[], signal?: AbortSignal): Promise<Map<string, string>> {
  const refs = branches.map((branch) => `refs/heads/${branch}`);
  // `--` ends options, so a remote can never be read as one.
  const result = await runOk(options, 'ls-remote', tmpdir(), ['ls-remote', '--heads', '--', remote, ...refs], signal);
  const found = new Map<string, string>();
  for (const line of outputLines(result)) {
    // `<sha>\t<ref>`, nothing around it. ls-remote patterns match ref tails
    // (`x/refs/heads/main` too): keep exact names only.
    const [sha, ref, ...rest] = line.split('\t');
    if (sha === undefined || ref === undefined || rest.length > 0 || !shaPattern.test(sha) || !refs.includes(ref)) continue;
    const branch = ref.slice('refs/heads/'.length);
    const seen = found.get(branch);
    if (seen !== undefined && seen !== sha) throw new CodefleetError('git_failed', `git ls-remote printed two shas for ${ref}`);
    found.set(branch, sha);
  }
  return found;
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
  signal?: AbortSignal;
}

/**
 * The porcelain flag of the line `<flag>\t<sha>:<ref>\t<summary>` that reports this push
 * (`=` up to date, `!` rejected, `*` new, ...), or undefined when there is none.
 */
function pushFlag(result: ProcessResult, sha: string, ref: string): string | undefined {
  const reported = `\t${sha}:${ref}\t`;
  return outputLines(result).find((line) => line.slice(1).startsWith(reported))?.charAt(0);
}

/**
 * Pushes `req.sha` (default: HEAD of `workdir`) to `refs/heads/<branch>` with
 * `--force-with-lease=<ref>:<expected>`. Git's documented semantics: the ref is updated
 * only if it currently equals `<expected>`, and an empty `<expected>` means it must not
 * exist yet. Git checks "already up to date" before the lease, so re-pushing a sha that
 * already landed succeeds (`updated: false`).
 *
 * A refused push whose branch holds exactly this sha afterwards also converges
 * (`updated: false`): an earlier push of the same commit won the race for the ref (the
 * server then says "reference already exists" or "failed to update ref"), and the branch
 * is what this push wanted it to be.
 *
 * The push dies with this process: one orphaned by a killed worker would keep the
 * forge's credentials in its environment and could land in the middle of the retry's push.
 */
export async function pushFenced(options: GitOptions, req: PushRequest): Promise<{ sha: string; updated: boolean }> {
  // Push a sha, never `HEAD`, so the returned sha is exactly what was pushed even if
  // something moves HEAD meanwhile.
  const sha = req.sha === undefined
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
  if (flag === '!' && (await remoteSha(options, req.remote, req.branch, req.signal)) === sha) return { sha, updated: false };
  throw gitFailure('push', result);
}

/** The remote branch's sha, or undefined when it is absent or cannot be read now. */
async function remoteSha(options: GitOptions, remote: string, branch: string, signal?: AbortSignal): Promise<string | undefined> {
  try {
    return (await remoteBranches(options, remote, [branch], signal)).get(branch);
  } catch {
    // The push's own failure says more than a failed second look.
    return undefined;
  }
}
