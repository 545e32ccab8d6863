import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { createTempDir, type TempDir } from './temp-dir.js';

/**
 * The environment every test git call runs with: no user or system config can change
 * behaviour (GIT_CONFIG_GLOBAL=/dev/null), a fixed identity, and no prompts.
 */
export function gitTestEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'codefleet test',
    GIT_AUTHOR_EMAIL: 'test@codefleet.invalid',
    GIT_COMMITTER_NAME: 'codefleet test',
    GIT_COMMITTER_EMAIL: 'test@codefleet.invalid',
    GIT_TERMINAL_PROMPT: '0',
    ...extra,
  };
}

/** Runs git with an argument array in `cwd` under `gitTestEnv`; resolves to trimmed stdout. */
export async function git(cwd: string, args: readonly string[]): Promise<string> {
  const { stdout } = await execa('git', args, { cwd, env: gitTestEnv(), stdin: 'ignore' });
  return stdout.trim();
}

/** A temporary git repository with at least one commit on `branch`. */
export interface TempRepo extends TempDir {
  readonly branch: string;
  git(args: readonly string[]): Promise<string>;
  /** Writes files (paths relative to the repo) and commits them; resolves to the new HEAD sha. */
  commit(files: Record<string, string>, message?: string): Promise<string>;
}

/** Options for {@link createTempRepo}. */
export interface TempRepoOptions {
  /** Files of the first commit, path → content. Defaults to a README. */
  files?: Record<string, string>;
  branch?: string;
  prefix?: string;
}

/** Creates a non-bare repository in a temp dir and commits `files` on `branch` (default main). */
export async function createTempRepo(options: TempRepoOptions = {}): Promise<TempRepo> {
  const dir = await createTempDir(options.prefix ?? 'repo');
  const branch = options.branch ?? 'main';
  const run = (args: readonly string[]) => git(dir.path, args);
  await run(['init', '--quiet', `--initial-branch=${branch}`]);
  const commit = async (files: Record<string, string>, message = 'test commit') => {
    await writeFiles(dir.path, files);
    await run(['add', '--all']);
    await run(['commit', '--quiet', '--allow-empty', '-m', message]);
    return run(['rev-parse', 'HEAD']);
  };
  await commit(options.files ?? { 'README.md': '# test repo\n' }, 'initial commit');
  return { ...dir, branch, git: run, commit };
}

/** Writes `files` (relative path → content) under `root`, creating parent directories. */
export async function writeFiles(root: string, files: Record<string, string>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const path = join(root, rel);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
  }
}
