import { CodefleetError, isMemoryFile } from '@codefleet/core';
import { captureProcess } from '@codefleet/process';

/** Where run files (prompt, feedback) live inside the working copy; never committed. */
export const runFilesDir = '.codefleet';

/** Options for {@link changedFiles}. */
export interface ChangedFilesOptions {
  /** The git binary the worker resolved at start; default `git` on the environment's PATH. */
  gitPath?: string | undefined;
  /**
   * HEAD as it was before the agent ran (see {@link headCommit}). When HEAD has moved
   * since, files changed by the new commits count too. `null`: the branch had no commit.
   */
  since?: string | null;
  /**
   * Paths left out while untracked: the context file the workspace wrote for the agent
   * (`CLAUDE.md`, ...) is there before the agent starts and is never committed, so it is
   * not the agent's work. A repository's own tracked copy still counts when edited.
   */
  untrackedContext?: readonly string[];
}

interface GitResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Options every git call here passes. --no-optional-locks: a status must not rewrite the
 * index while someone else uses it. The rest: the repository's config is shared with the
 * mirror and every other working copy, and an agent can write to it; an fsmonitor command
 * or hooks planted there must not run in this (or another job's) status.
 */
export const agentGitOptions = [
  '--no-optional-locks',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.hooksPath=/dev/null',
  // Never into a submodule, whose own config a run can write (a filter git would run here).
  '-c',
  'diff.ignoreSubmodules=all',
  '-c',
  'submodule.recurse=false',
  '-c',
  'status.submoduleSummary=false',
] as const;

async function git(
  workdir: string,
  env: Readonly<Record<string, string>>,
  args: readonly string[],
  gitPath = 'git',
): Promise<GitResult> {
  const result = await captureProcess([gitPath, ...agentGitOptions, ...args], { cwd: workdir, env });
  if (result.spawnError !== undefined) throw gitError(workdir, args, `git could not start: ${result.spawnError}`);
  return result;
}

function gitError(workdir: string, args: readonly string[], reason: string): CodefleetError {
  const firstLine = reason.trim().split('\n')[0] ?? '';
  return new CodefleetError('git_failed', `git ${args[0] ?? ''} failed in ${workdir}: ${firstLine}`, {
    details: { workdir, args: [...args] },
  });
}

async function gitOk(
  workdir: string,
  env: Readonly<Record<string, string>>,
  args: readonly string[],
  gitPath?: string,
): Promise<string> {
  const result = await git(workdir, env, args, gitPath);
  if (result.exitCode !== 0) throw gitError(workdir, args, result.stderr || `exit code ${String(result.exitCode)}`);
  return result.stdout;
}

/**
 * The commit HEAD points at in `workdir`, or `null` on a branch with no commit yet.
 *
 * @throws {CodefleetError} `git_failed` when `workdir` is not a git work tree.
 */
export async function headCommit(
  workdir: string,
  env: Readonly<Record<string, string>>,
  gitPath?: string,
): Promise<string | null> {
  const args = ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'];
  const result = await git(workdir, env, args, gitPath);
  if (result.exitCode === 0) return result.stdout.trim();
  // --verify --quiet exits 1 silently for a missing ref; anything else is a real failure.
  if (result.exitCode === 1 && result.stderr.trim() === '') return null;
  throw gitError(workdir, args, result.stderr || `exit code ${String(result.exitCode)}`);
}

/** Paths named in `git status --porcelain=v1 -z` output; renames and copies give both paths. */
export function parsePorcelainZ(output: string): string[] {
  const fields = output.split('\0');
  const paths: string[] = [];
  for (let i = 0; i < fields.length; i += 1) {
    const entry = fields[i] ?? '';
    if (entry.length < 4) continue;
    paths.push(entry.slice(3));
    // For R and C the original path follows as its own NUL-terminated field.
    const status = entry.slice(0, 2);
    if (status.includes('R') || status.includes('C')) {
      const original = fields[i + 1];
      if (original) paths.push(original);
      i += 1;
    }
  }
  return paths;
}

const splitZ = (output: string) => output.split('\0').filter((path) => path !== '');
// The memory bank (`.codefleet/memory/*.md`) is the repository's, not a run file: an agent
// that adds to it has changed something (proposed in the PR, see the pipeline).
const isRunFile = (path: string) => (path === runFilesDir || path.startsWith(`${runFilesDir}/`)) && !isMemoryFile(path);

/**
 * Files of the working copy that differ from HEAD, or from `options.since` when HEAD has
 * moved: modified, added, deleted, renamed (both names) and untracked files, each untracked
 * file listed on its own. Paths are relative to the repository root, sorted, without
 * `.codefleet/` (but for memory bank files, `.codefleet/memory/*.md`). Read through `git status --porcelain=v1 -z`, so any file name is safe.
 *
 * @throws {CodefleetError} `git_failed` when git cannot read `workdir`.
 */
export async function changedFiles(
  workdir: string,
  env: Readonly<Record<string, string>>,
  options: ChangedFilesOptions = {},
): Promise<string[]> {
  const status = await gitOk(
    workdir,
    env,
    ['status', '--porcelain=v1', '-z', '--untracked-files=all'],
    options.gitPath,
  );
  const context = new Set(options.untrackedContext ?? []);
  const untracked = new Set(
    splitZ(status)
      .filter((entry) => entry.startsWith('?? '))
      .map((entry) => entry.slice(3)),
  );
  const paths = new Set(parsePorcelainZ(status).filter((path) => !(context.has(path) && untracked.has(path))));
  if (options.since !== undefined) {
    const head = await headCommit(workdir, env, options.gitPath);
    if (head !== options.since && head !== null) {
      // Working tree against the old HEAD covers the agent's commits and its uncommitted
      // edits on top; with no old HEAD every tracked file is new.
      const committed =
        options.since === null
          ? await gitOk(workdir, env, ['ls-files', '-z', '--full-name'], options.gitPath)
          : await gitOk(workdir, env, ['diff', '--name-only', '-z', '--no-renames', options.since], options.gitPath);
      for (const path of splitZ(committed)) paths.add(path);
    }
  }
  return [...paths].filter((path) => !isRunFile(path)).sort();
}
