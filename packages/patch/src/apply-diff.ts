import { lstat, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiffUnreadable, readDiff, type DiffFile } from './diff-headers.js';
import { matchLineEnds } from './diff-line-ends.js';
import { chooseStrip } from './diff-strip.js';
import { FileStates } from './file-states.js';
import type { PatchGit } from './git.js';
import { isProtected, PathRefused, resolveInside } from './paths.js';

/** What became of a diff: the engine's command statuses; `notes` say how it was made to apply. */
export type DiffOutcome =
  | { status: 'succeeded' | 'planned'; output?: string; notes?: string[] }
  | { status: 'failed' | 'skipped'; error: string; output?: string };

/** How a diff is applied. */
export interface DiffOptions {
  git: PatchGit;
  patterns: readonly string[];
  protectedAction: 'error' | 'skip' | 'log';
  /** Check that the diff would apply, write nothing. */
  dryRun: boolean;
  /** Where the files the diff writes are remembered first, for a rollback of the whole patch. */
  states?: FileStates;
}

/** A regular file's mode: the only kind of file a diff may create or change. */
const regularMode = /^0*100[0-7]{3}$/;

/** One way of applying a checked diff, tried in turn until one applies. */
interface Attempt {
  args: string[];
  /** Merge through an index that holds the work tree's files (3-way). */
  worktreeIndex?: boolean;
  note?: string;
}

const attempts = (inRepo: boolean): Attempt[] => [
  { args: [] },
  // Only a repository has the blobs a 3-way merge starts from.
  ...(inRepo
    ? [
        {
          args: ['--3way'],
          worktreeIndex: true,
          note: 'merged 3-way: the diff was made against another version of the file',
        },
      ]
    : []),
  // A model's first or last context line is often stale, and a hunk with context on one
  // side only would have to end the file: only the lines next to a change must match.
  {
    args: ['-C1', '--ignore-whitespace', '--unidiff-zero'],
    note: 'applied with reduced context (fuzz): only the context line next to each change had to match, whitespace ignored',
  },
];

/**
 * Applies a unified diff (text, or the bytes git will read) inside `root` (a real path),
 * after checking every path git will write, read two ways: by the engine's port of git's
 * own header parser (`diff --git`, `---`/`+++`, rename and copy lines, C-quoted or not,
 * binary patches) and by git itself (`git apply --numstat`, forwards and reversed, which
 * does not write); a name git reads that the port does not is refused, and so is a diff in
 * which neither finds a file. Each path must resolve inside the workspace through the
 * files on disk (symlinks followed, untracked and ignored ones included: git's own check
 * looks at the index) and not be protected; no path may be or become a symlink or a
 * submodule. Names without `a/` `b/` prefixes are read with `-p0` (see `chooseStrip`); an
 * LF diff of a CRLF file gets CRLF ends (see `matchLineEnds`).
 *
 * Then `git apply` (which also refuses to write beyond a symlink on disk); when that does
 * not apply, in a repository a 3-way merge against an index holding the work tree's own
 * files (uncommitted changes included; the real index is not touched), then reduced
 * context. Each attempt that fails leaves the files exactly as they were; `notes` say
 * which one applied. In a dry run the same attempts run with `--check`.
 */
export async function applyDiff(root: string, diff: string | Uint8Array, options: DiffOptions): Promise<DiffOutcome> {
  const { git } = options;
  const dir = await mkdtemp(join(tmpdir(), 'codefleet-diff-'));
  try {
    const bytes = typeof diff === 'string' ? Buffer.from(diff, 'utf8') : Buffer.from(diff);
    const file = join(dir, 'patch.diff');
    await writeFile(file, bytes.at(-1) === 10 ? bytes : Buffer.concat([bytes, Buffer.from('\n')]));
    const inRepo = await isRepository(root, git);
    const strip = await chooseStrip(root, bytes);
    const checked = await checkPaths(root, bytes, file, git, inRepo, strip);
    if ('gitRefuses' in checked) return { status: 'failed', error: `the diff does not apply: ${checked.gitRefuses}` };
    const { paths, files } = checked;
    const noData = withoutData(files, bytes);
    if (noData.length > 0) {
      return {
        status: 'failed',
        error: `change without its data ("Binary files ... differ") for ${noData.slice(0, 5).join(', ')}: nothing can be applied from it; make the diff with \`git diff --binary\``,
      };
    }
    const touched = paths.filter((p) => isProtected(p, options.patterns));
    if (touched.length > 0 && options.protectedAction !== 'log') {
      return {
        status: options.protectedAction === 'skip' ? 'skipped' : 'failed',
        error: `protected file ${touched.join(', ')}`,
      };
    }
    const ends = await matchLineEnds(root, bytes, strip);
    // Only when the diff does not apply as it is: git converts line ends itself where the repository's attributes say so.
    const asIs =
      ends.converted.length === 0 ||
      (await git.run(['apply', '--check', `-p${strip}`, '--whitespace=nowarn', file])).exitCode === 0;
    if (!asIs)
      await writeFile(file, ends.bytes.at(-1) === 10 ? ends.bytes : Buffer.concat([ends.bytes, Buffer.from('\n')]));
    const notes = [
      ...(touched.length > 0 ? [`warning: protected file ${touched.join(', ')} changed`] : []),
      ...(strip === 0 ? ['names without a/ b/ prefixes: read as paths from the workspace root (-p0)'] : []),
      ...(!asIs
        ? [
            `CRLF line ends given to the diff's lines for ${ends.converted.slice(0, 5).join(', ')}, as the file has them`,
          ]
        : []),
    ];
    return await applyChecked(root, file, paths, { strip, inRepo, notes, dir }, options);
  } catch (error) {
    if (error instanceof PathRefused) return { status: 'failed', error: error.message };
    if (error instanceof DiffUnreadable) return { status: 'failed', error: `the diff is refused: ${error.message}` };
    throw error;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface Checked {
  strip: number;
  inRepo: boolean;
  notes: string[];
  /** A private temporary directory, for the 3-way merge's index. */
  dir: string;
}

/** Tries each attempt in turn; a failed one is undone before the next. */
async function applyChecked(
  root: string,
  file: string,
  paths: string[],
  checked: Checked,
  options: DiffOptions,
): Promise<DiffOutcome> {
  const { git, dryRun } = options;
  const before = new FileStates(root);
  if (!dryRun) {
    await before.remember(paths);
    await options.states?.remember(paths);
  }
  const failures: string[] = [];
  for (const attempt of attempts(checked.inRepo)) {
    const env = attempt.worktreeIndex ? await worktreeIndex(git, checked.dir, root, paths) : {};
    const run = await git.run(
      ['apply', ...(dryRun ? ['--check'] : []), `-p${checked.strip}`, '--whitespace=nowarn', ...attempt.args, file],
      env,
    );
    // A 3-way check reports conflicts yet exits 0.
    const conflicts = /with conflicts/.test(run.outputTail);
    if (run.exitCode === 0 && !run.timedOut && !conflicts) {
      const reduced = run.outputTail.split('\n').filter((l) => l.startsWith('Context reduced'));
      const notes = [...checked.notes, ...(attempt.note === undefined ? [] : [attempt.note]), ...reduced];
      return {
        status: dryRun ? 'planned' : 'succeeded',
        output: run.outputTail,
        ...(notes.length > 0 ? { notes } : {}),
      };
    }
    if (!dryRun) await before.restore();
    failures.push(run.timedOut ? 'git apply timed out' : conflicts ? 'it had conflicts' : errorLines(run.outputTail));
    if (run.timedOut) break;
  }
  const [first = '', merged, fuzzed] = checked.inRepo ? failures : [failures[0], undefined, failures[1]];
  const tried = [
    ...(merged === undefined ? [] : [`nor by a 3-way merge (${merged})`]),
    ...(fuzzed === undefined ? [] : ['nor with reduced context']),
  ];
  return {
    status: 'failed',
    error: `the diff does not apply: ${first}${tried.length > 0 ? `; ${tried.join(', ')}` : ''}`,
  };
}

/**
 * Files the diff says changed without saying how: git's `Binary files ... differ`, and
 * what `diff -r` prints for a binary file or a file that became a directory. git skips the
 * latter as text between patches: the rest would apply, files short, and look a success.
 */
function withoutData(files: DiffFile[], bytes: Buffer): string[] {
  const names = files.filter((f) => f.binary === 'no-data').flatMap((f) => f.newPath ?? f.oldPath ?? []);
  const lines = /^(?:(?:Binary files|Files) (.+) and (.+) differ|File (.+) is a .+ while file (.+) is a .+?)\r?$/gm;
  for (const m of bytes.toString('latin1').matchAll(lines)) {
    const name = [m[2], m[1], m[4], m[3]].find((n) => n !== undefined && n !== '/dev/null') ?? '';
    if (!names.some((known) => name.endsWith(`/${known}`) || name === known)) names.push(name);
  }
  return names;
}

/** git's `error:` lines, the reason without its progress lines ("Applied patch ... cleanly", "Checking patch"). */
function errorLines(output: string): string {
  const errors = output
    .split('\n')
    .filter((l) => /^(error|fatal): /.test(l))
    .map((l) => l.replace(/^(error|fatal): /, ''));
  return errors.length > 0 ? errors.slice(0, 3).join('; ') : (output.trim().split('\n').at(-1) ?? 'git apply failed');
}

/**
 * A private index that holds HEAD, with the diff's files as they are in the work tree: a
 * 3-way merge checks the files against the index and would refuse any uncommitted change.
 */
async function worktreeIndex(
  git: PatchGit,
  dir: string,
  root: string,
  paths: string[],
): Promise<Record<string, string>> {
  const env = { GIT_INDEX_FILE: join(dir, 'index') };
  await rm(env.GIT_INDEX_FILE, { force: true });
  const head = await git.list(['rev-parse', '--verify', '--quiet', 'HEAD^{tree}']);
  await git.run(['read-tree', head.exitCode === 0 ? 'HEAD' : '--empty'], env);
  const present: string[] = [];
  const absent: string[] = [];
  for (const path of paths)
    ((await lstat(join(root, path)).catch(() => undefined))?.isFile() ? present : absent).push(path);
  if (present.length > 0) await git.run(['--literal-pathspecs', 'add', '-f', '--', ...present], env);
  if (absent.length > 0)
    await git.run(['--literal-pathspecs', 'rm', '-q', '--cached', '--ignore-unmatch', '--', ...absent], env);
  return env;
}

/** Every path the diff names, checked (or throws why not); or git's reason when git cannot read the diff at all. */
async function checkPaths(
  root: string,
  diff: Uint8Array,
  file: string,
  git: PatchGit,
  inRepo: boolean,
  strip: number,
): Promise<{ paths: string[]; files: DiffFile[] } | { gitRefuses: string }> {
  const files = readDiff(diff, { strip });
  if (files.length === 0)
    throw new DiffUnreadable('no file header the checker understands (diff --git, or ---/+++ followed by @@)');
  const paths = [...new Set(files.flatMap((f) => f.paths))];
  const odd = files.flatMap((f) => f.modes).find((mode) => !regularMode.test(mode));
  if (odd !== undefined)
    throw new DiffUnreadable(`mode ${odd}: a diff may only create or change regular files, not symlinks or submodules`);

  // git's own reading: the names it will write, and the modes it will give.
  const forward = await git.list(['apply', '--numstat', '-z', `-p${strip}`, file]);
  if (forward.exitCode !== 0)
    return {
      gitRefuses:
        forward.stderr.trim().split('\n')[0] ||
        `git apply --numstat exit ${forward.exitCode ?? forward.spawnError ?? '?'}`,
    };
  const reverse = await git.list(['apply', '--numstat', '-z', '-R', `-p${strip}`, file]);
  const summary = await git.list(['apply', '--summary', `-p${strip}`, file]);
  if (reverse.exitCode !== 0 || summary.exitCode !== 0)
    throw new DiffUnreadable('git cannot read the diff reversed or summarised');
  const gitNames = [...numstatNames(forward.stdout), ...numstatNames(reverse.stdout)];
  const unseen = gitNames.filter((name) => !paths.includes(name));
  if (unseen.length > 0)
    throw new DiffUnreadable(
      `git reads file names the checker does not: ${unseen
        .slice(0, 5)
        .map((n) => JSON.stringify(n))
        .join(', ')}`,
    );
  const gitModes = [
    ...summary.stdout.matchAll(/^ (?:(?:create|delete) mode (\S+)|mode change (\S+) => (\S+))/gm),
  ].flatMap((m) => m.slice(1).filter(Boolean));
  const oddMode = gitModes.find((mode) => !regularMode.test(mode ?? ''));
  if (oddMode !== undefined)
    throw new DiffUnreadable(
      `mode ${oddMode}: a diff may only create or change regular files, not symlinks or submodules`,
    );

  for (const path of paths) {
    const absolute = await resolveInside(root, path);
    if ((await lstat(absolute).catch(() => undefined))?.isSymbolicLink())
      throw new PathRefused(path, 'is a symlink; a diff does not change symlinks');
  }
  if (inRepo) {
    const staged = await git.list(['--literal-pathspecs', 'ls-files', '--stage', '-z', '--', ...paths]);
    if (staged.exitCode !== 0)
      throw new DiffUnreadable(`git ls-files failed: ${staged.stderr.trim().split('\n')[0] ?? ''}`);
    for (const entry of staged.stdout.split('\0')) {
      const [info = '', path = ''] = entry.split('\t');
      if (paths.includes(path) && !regularMode.test(info.split(' ')[0] ?? ''))
        throw new PathRefused(path, 'is a symlink or submodule in the index; a diff does not change those');
    }
  }
  return { paths, files };
}

/** Names from `git apply --numstat -z`: `added\tdeleted\tname` records. */
function numstatNames(stdout: string): string[] {
  return stdout
    .split('\0')
    .filter((r) => r !== '')
    .map((record) => record.split('\t').slice(2).join('\t'));
}

async function isRepository(root: string, git: PatchGit): Promise<boolean> {
  const top = await git.list(['rev-parse', '--show-toplevel']);
  return top.exitCode === 0 && top.stdout.trim() === root;
}
