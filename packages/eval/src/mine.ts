import { captureProcess } from '@codefleet/process';
import type { Instance } from './task.js';
import { isDocPath, isTestPath } from './test-paths.js';

/** What every mining run shares, wherever its changes come from (commits, merged pull requests). */
export interface MineRun {
  /** A local repository (work tree or bare) holding the history. */
  gitDir: string;
  /** The repository as instances name it (`owner/name`, a URL or a path): their `repo`. */
  repo: string;
  /** Changes older than this are not read. */
  since?: Date;
  /** Instances to mine at most (already mined ones count); default 100. */
  max?: number;
  /** The newest share of the candidates held out (`split: holdout`); default 0.2. */
  holdoutShare?: number;
  /** Instance ids mined by an earlier run: skipped (a run resumes). */
  done?: ReadonlySet<string>;
  /** The complete environment of git (PATH at least). */
  env: Record<string, string>;
  /** Each instance as it is made, before the next: where a resumable run appends it. */
  onInstance: (instance: Instance) => Promise<void>;
  /** After each change read. */
  onProgress?: (progress: MineProgress) => void;
}

/** What {@link mineCommits} reads and how far it goes. */
export interface MineOptions extends MineRun {
  /** The branch or commit whose first-parent history is read; default HEAD. */
  ref?: string;
  /** Commits to read at most; default 5000. */
  maxCommits?: number;
}

/** How far a mining run is. */
export interface MineProgress {
  read: number;
  total: number;
  mined: number;
  /** Changes passed over, by reason. */
  skipped: Record<string, number>;
}

/** What a task asks for, and where that text came from. */
export interface Statement {
  text: string;
  source: Instance['statement_source'];
}

/** One change a source hands to {@link mineChanges}: its commit, and how its instance is named. */
export interface Change {
  /** The commit whose diff against its first parent is the change. */
  sha: string;
  /** Its naming, given the commit's message. */
  name(message: string): {
    /** What follows `owner__name-` in the instance id: a pull request's number, else the short sha. */
    suffix: string;
    /** Asked only for an instance that is made: it may cost a request. */
    statement(): Promise<Statement>;
  };
}

/** A change's commit and what it changed against its first parent. */
interface Candidate {
  change: Change;
  parent: string;
  tests: string[];
  fix: string[];
}

type GitAccess = Pick<MineRun, 'gitDir' | 'env'>;

async function git(access: GitAccess, args: string[]): Promise<string> {
  const run = await captureProcess(['git', ...args], { cwd: access.gitDir, env: access.env });
  if (run.exitCode !== 0) {
    throw new Error(`git ${args[0]} failed: ${run.spawnError ?? run.stderr.trim().split('\n')[0] ?? ''}`);
  }
  return run.stdout;
}

/**
 * Turns a repository's history into instances: each commit of `ref`'s first-parent history (a
 * merged pull request's merge or squash, or a plain commit) whose change touches both tests
 * and other files that are not documentation (see {@link mineChanges}). A `Merge pull request
 * #12` or `(#12)` message names the instance after the pull request and states its title and
 * body; any other commit is named by its sha and stated by its message.
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
  return mineChanges(
    options,
    shas.map((sha) => ({
      sha,
      name: (message) => {
        const statement = statementOf(message);
        return {
          suffix: String(statement.number ?? sha.slice(0, 12)),
          statement: async () => ({
            text: statement.text,
            source: statement.number === undefined ? 'commit' : 'pull_request',
          }),
        };
      },
    })),
  );
}

/**
 * Mines `changes` (newest first): each one's commit against its first parent is the base, its
 * test files' diff the hidden tests, the rest the fix. A change passed over (a binary change
 * or one that is not UTF-8, no test, nothing but tests and docs) is counted by reason, in
 * `skipped` with what the source passed over before. Instances are handed to `onInstance` one
 * by one, so a run stopped half-way keeps what it made and the next skips it by id, without
 * asking its statement again.
 */
export async function mineChanges(
  run: MineRun,
  changes: readonly Change[],
  skipped: Record<string, number> = {},
): Promise<MineProgress> {
  const progress: MineProgress = { read: 0, total: changes.length, mined: 0, skipped };
  const skip = (reason: string) => {
    progress.skipped[reason] = (progress.skipped[reason] ?? 0) + 1;
  };
  const candidates: Candidate[] = [];
  for (const change of changes) {
    progress.read += 1;
    const found = await candidate(run, change);
    if (typeof found === 'string') skip(found);
    else candidates.push(found);
    run.onProgress?.(progress);
  }
  // The newest share of every candidate is the holdout, wherever the run stops.
  const holdout = Math.round(candidates.length * (run.holdoutShare ?? 0.2));
  const max = run.max ?? 100;
  for (const [index, found] of candidates.entries()) {
    if (progress.mined >= max) break;
    const instance = await instanceOf(run, found, index < holdout ? 'holdout' : 'dev');
    if (instance !== 'done' && typeof instance === 'string') {
      skip(instance);
      continue;
    }
    progress.mined += 1;
    if (instance !== 'done') await run.onInstance(instance);
  }
  run.onProgress?.(progress);
  return progress;
}

/** Which of `shas` are commits of the repository (a clone may lack a pull request's merge). */
export async function commitsIn(access: GitAccess, shas: readonly string[]): Promise<Set<string>> {
  if (shas.length === 0) return new Set();
  const found = await git(access, ['rev-list', '--no-walk', '--ignore-missing', ...shas, '--']);
  return new Set(found.split('\n').filter((line) => line !== ''));
}

// A change's split into tests and fix, or why it is no candidate.
async function candidate(access: GitAccess, change: Change): Promise<Candidate | string> {
  const { sha } = change;
  const parents = (await git(access, ['rev-list', '--parents', '-n', '1', sha])).trim().split(' ').slice(1);
  const parent = parents[0];
  if (parent === undefined) return 'root commit';
  // `--numstat` says `-` for the line counts of a binary file, which no text patch carries.
  const stats = (await git(access, ['diff', '--numstat', '-z', '--no-renames', parent, sha]))
    .split('\0')
    .filter((entry) => entry !== '')
    .map((entry) => entry.split('\t'));
  if (stats.some(([added]) => added === '-')) return 'binary change';
  const files = stats.map((fields) => fields.slice(2).join('\t'));
  const tests = files.filter(isTestPath);
  const fix = files.filter((file) => !isTestPath(file));
  if (tests.length === 0) return 'no test change';
  if (fix.filter((file) => !isDocPath(file)).length === 0) return 'no change outside tests and docs';
  return { change, parent, tests, fix };
}

// The instance of a candidate, `done` when an earlier run made it, or why it cannot be one.
async function instanceOf(
  run: MineRun,
  found: Candidate,
  split: Instance['split'],
): Promise<Instance | 'done' | string> {
  const { sha } = found.change;
  const [date, ...message] = (await git(run, ['show', '-s', '--format=%cI%n%B', sha])).split('\n');
  const naming = found.change.name(message.join('\n'));
  const id = `${instancePrefix(run.repo)}-${naming.suffix}`;
  if (run.done?.has(id)) return 'done';
  const diff = (files: string[]) =>
    git(run, ['diff', '--no-color', '--no-ext-diff', '--no-renames', found.parent, sha, '--', ...files]);
  const [patch, testPatch] = [await diff(found.fix), await diff(found.tests)];
  // A suite line is JSON text: bytes that are not UTF-8 (read as U+FFFD) would not apply again.
  if (patch.includes('\uFFFD') || testPatch.includes('\uFFFD')) return 'not UTF-8 text';
  const statement = await naming.statement();
  return {
    instance_id: id,
    repo: run.repo,
    base_commit: found.parent,
    created_at: date ?? new Date(0).toISOString(),
    problem_statement: statement.text,
    statement_source: statement.source,
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
