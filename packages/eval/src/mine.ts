import { captureProcess } from '@codefleet/process';
import type { Instance } from './task.js';
import { isDocPath, isTestPath } from './test-paths.js';

/** What {@link mineCommits} reads and how far it goes. */
export interface MineOptions {
  /** A local repository (work tree or bare) holding the history. */
  gitDir: string;
  /** The repository as instances name it (`owner/name`, a URL or a path): their `repo`. */
  repo: string;
  /** The branch or commit whose first-parent history is read; default HEAD. */
  ref?: string;
  /** Commits older than this are not read. */
  since?: Date;
  /** Instances to mine at most (already mined ones count); default 100. */
  max?: number;
  /** Commits to read at most; default 5000. */
  maxCommits?: number;
  /** The newest share of the candidates held out (`split: holdout`); default 0.2. */
  holdoutShare?: number;
  /** Instance ids mined by an earlier run: skipped (a run resumes). */
  done?: ReadonlySet<string>;
  /** The complete environment of git (PATH at least). */
  env: Record<string, string>;
  /** Each instance as it is made, before the next: where a resumable run appends it. */
  onInstance: (instance: Instance) => Promise<void>;
  /** After each commit read. */
  onProgress?: (progress: MineProgress) => void;
}

/** How far a mining run is. */
export interface MineProgress {
  read: number;
  total: number;
  mined: number;
  /** Commits passed over, by reason. */
  skipped: Record<string, number>;
}

/** A first-parent commit and what it changed against its first parent. */
interface Candidate {
  sha: string;
  parent: string;
  tests: string[];
  fix: string[];
}

async function git(options: MineOptions, args: string[]): Promise<string> {
  const run = await captureProcess(['git', ...args], { cwd: options.gitDir, env: options.env });
  if (run.exitCode !== 0) {
    throw new Error(`git ${args[0]} failed: ${run.spawnError ?? run.stderr.trim().split('\n')[0] ?? ''}`);
  }
  return run.stdout;
}

/**
 * Turns a repository's history into instances: each commit of `ref`'s first-parent history (a
 * merged pull request's merge or squash, or a plain commit) whose change touches both tests
 * and other files that are not documentation. Its first parent is the base, its test files'
 * diff the hidden tests, the rest the fix. Newest first; a commit passed over (a binary
 * change or one that is not UTF-8, no test, nothing but tests and docs) is counted by reason. Instances are handed
 * to `onInstance` one by one, so a run stopped half-way keeps what it made and the next skips it.
 */
export async function mineCommits(options: MineOptions): Promise<MineProgress> {
  const shas = (
    await git(options, [
      'rev-list',
      '--first-parent',
      `--max-count=${options.maxCommits ?? 5000}`,
      ...(options.since === undefined ? [] : [`--since=${options.since.toISOString()}`]),
      options.ref ?? 'HEAD',
      '--',
    ])
  )
    .split('\n')
    .filter((line) => line !== '');
  const progress: MineProgress = { read: 0, total: shas.length, mined: 0, skipped: {} };
  const skip = (reason: string) => {
    progress.skipped[reason] = (progress.skipped[reason] ?? 0) + 1;
  };
  const candidates: Candidate[] = [];
  for (const sha of shas) {
    progress.read += 1;
    const found = await candidate(options, sha);
    if (typeof found === 'string') skip(found);
    else candidates.push(found);
    options.onProgress?.(progress);
  }
  // The newest share of every candidate is the holdout, wherever the run stops.
  const holdout = Math.round(candidates.length * (options.holdoutShare ?? 0.2));
  const max = options.max ?? 100;
  for (const [index, found] of candidates.entries()) {
    if (progress.mined >= max) break;
    const instance = await instanceOf(options, found, index < holdout ? 'holdout' : 'dev');
    if (typeof instance === 'string') {
      skip(instance);
      continue;
    }
    progress.mined += 1;
    if (!options.done?.has(instance.instance_id)) await options.onInstance(instance);
  }
  options.onProgress?.(progress);
  return progress;
}

// A commit's split into tests and fix, or why it is no candidate.
async function candidate(options: MineOptions, sha: string): Promise<Candidate | string> {
  const parents = (await git(options, ['rev-list', '--parents', '-n', '1', sha])).trim().split(' ').slice(1);
  const parent = parents[0];
  if (parent === undefined) return 'root commit';
  // `--numstat` says `-` for the line counts of a binary file, which no text patch carries.
  const stats = (await git(options, ['diff', '--numstat', '-z', '--no-renames', parent, sha]))
    .split('\0')
    .filter((entry) => entry !== '')
    .map((entry) => entry.split('\t'));
  if (stats.some(([added]) => added === '-')) return 'binary change';
  const files = stats.map((fields) => fields.slice(2).join('\t'));
  const tests = files.filter(isTestPath);
  const fix = files.filter((file) => !isTestPath(file));
  if (tests.length === 0) return 'no test change';
  if (fix.filter((file) => !isDocPath(file)).length === 0) return 'no change outside tests and docs';
  return { sha, parent, tests, fix };
}

// The instance of a candidate, or why it cannot be one.
async function instanceOf(
  options: MineOptions,
  found: Candidate,
  split: Instance['split'],
): Promise<Instance | string> {
  const diff = (files: string[]) =>
    git(options, ['diff', '--no-color', '--no-ext-diff', '--no-renames', found.parent, found.sha, '--', ...files]);
  const [patch, testPatch] = [await diff(found.fix), await diff(found.tests)];
  // A suite line is JSON text: bytes that are not UTF-8 (read as U+FFFD) would not apply again.
  if (patch.includes('\uFFFD') || testPatch.includes('\uFFFD')) return 'not UTF-8 text';
  const [date, ...message] = (await git(options, ['show', '-s', '--format=%cI%n%B', found.sha])).split('\n');
  const statement = statementOf(message.join('\n'));
  return {
    instance_id: `${instancePrefix(options.repo)}-${statement.number ?? found.sha.slice(0, 12)}`,
    repo: options.repo,
    base_commit: found.parent,
    created_at: date ?? new Date(0).toISOString(),
    problem_statement: statement.text,
    statement_source: statement.number === undefined ? 'commit' : 'pull_request',
    hints_text: '',
    patch,
    test_patch: testPatch,
    FAIL_TO_PASS: [],
    PASS_TO_PASS: [],
    NEW_TO_PASS: [],
    flaky_excluded: [],
    plan_digest: '',
    split,
  };
}

/** `owner__name` of a repository reference, as SWE-bench prefixes instance ids. */
export function instancePrefix(repo: string): string {
  const parts = repo
    .replace(/\.git\/?$/, '')
    .split(/[/:]/)
    .filter((part) => part !== '');
  return parts
    .slice(-2)
    .join('__')
    .replace(/[^A-Za-z0-9_.-]/g, '_');
}

/**
 * What a commit message asks for, without what git added: a GitHub merge's first line
 * (`Merge pull request #12 from …`) gives way to the title below it; a squash merge's `(#12)`
 * names the pull request. The number, when there is one, names the instance.
 */
export function statementOf(message: string): { text: string; number?: number } {
  const lines = message.trim().split('\n');
  const merge = /^Merge pull request #(\d+) from \S+/.exec(lines[0] ?? '');
  if (merge) return { text: lines.slice(1).join('\n').trim() || (lines[0] ?? ''), number: Number(merge[1]) };
  const squash = /\(#(\d+)\)\s*$/.exec(lines[0] ?? '');
  const text = lines.join('\n').trim();
  return squash ? { text, number: Number(squash[1]) } : { text };
}
