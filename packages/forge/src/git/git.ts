// Git operations shared by the adapters: every call is an argument array through
// `runProcess` (own process group, killed on timeout or abort, complete environment).
import { tmpdir } from 'node:os';
import { CodefleetError } from '@codefleet/core';
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

const shaLine = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

async function run(options: GitOptions, cwd: string, args: readonly string[], signal?: AbortSignal): Promise<ProcessResult> {
  return runProcess([options.gitPath ?? 'git', ...args], {
    cwd,
    // Never wait for a password prompt nobody will answer; the caller may still override.
    env: { GIT_TERMINAL_PROMPT: '0', ...options.env },
    timeoutMs: options.timeoutMs,
    ...(signal === undefined ? {} : { signal }),
  });
}

async function runOk(options: GitOptions, operation: string, cwd: string, args: readonly string[], signal?: AbortSignal): Promise<ProcessResult> {
  const result = await run(options, cwd, args, signal);
  if (result.exitCode !== 0) throw gitFailure(operation, result);
  return result;
}

/** The sha of HEAD in `workdir` (a commit; an unborn branch is refused). */
export async function headSha(options: GitOptions, workdir: string, signal?: AbortSignal): Promise<string> {
  const result = await runOk(options, 'rev-parse', workdir, ['rev-parse', '--verify', 'HEAD^{commit}'], signal);
  // Output is stdout and stderr together: take the line that is exactly an object name.
  const sha = result.outputTail.split('\n').map((line) => line.trim()).find((line) => shaLine.test(line));
  if (sha === undefined) throw new CodefleetError('git_failed', 'git rev-parse printed no commit sha for HEAD');
  return sha;
}

/** `refs/heads/<name>` → sha for those of `branches` that exist on `remote`. */
export async function remoteBranches(options: GitOptions, remote: string, branches: readonly string[], signal?: AbortSignal): Promise<Map<string, string>> {
  const refs = branches.map((branch) => `refs/heads/${branch}`);
  // `--` ends options, so a remote can never be read as one.
  const result = await runOk(options, 'ls-remote', tmpdir(), ['ls-remote', '--heads', '--', remote, ...refs], signal);
  const found = new Map<string, string>();
  for (const line of result.outputTail.split('\n')) {
    const [sha, ref] = line.trim().split('\t');
    // ls-remote patterns match ref tails (`x/refs/heads/main` too): keep exact names only.
    if (sha !== undefined && ref !== undefined && shaLine.test(sha) && refs.includes(ref)) found.set(ref.slice('refs/heads/'.length), sha);
  }
  return found;
}

/** Input of {@link pushFenced}. */
export interface PushRequest {
  workdir: string;
  remote: string;
  branch: string;
  /** The remote branch must be at this sha; undefined: it must not exist. */
  expectedSha?: string;
  signal?: AbortSignal;
}

/**
 * Pushes HEAD to `refs/heads/<branch>` with `--force-with-lease=<ref>:<expected>`. Git's
 * documented semantics: the ref is updated only if it currently equals `<expected>`, and
 * an empty `<expected>` means it must not exist yet. Git checks "already up to date"
 * before the lease, so re-pushing a sha that already landed succeeds (`updated: false`).
 */
export async function pushFenced(options: GitOptions, req: PushRequest): Promise<{ sha: string; updated: boolean }> {
  // Push the sha read here, not `HEAD`, so the returned sha is exactly what was pushed
  // even if something moves HEAD meanwhile.
  const sha = await headSha(options, req.workdir, req.signal);
  const ref = `refs/heads/${req.branch}`;
  const lease = `--force-with-lease=${ref}:${req.expectedSha ?? ''}`;
  // --no-verify: a pre-push hook is code from the working copy (an agent could plant
  // one) and must not run with the credentials a push holds.
  const result = await runOk(options, 'push', req.workdir, ['push', '--porcelain', '--no-verify', lease, '--', req.remote, `${sha}:${ref}`], req.signal);
  // Porcelain: `<flag>\t<from>:<to>\t<summary>`; `=` means the remote was already there.
  const status = result.outputTail.split('\n').find((line) => line.includes(`:${ref}\t`));
  return { sha, updated: !status?.startsWith('=') };
}
