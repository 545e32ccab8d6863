import { lstat, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiffUnreadable, readDiff } from './diff-headers.js';
import type { PatchGit } from './git.js';
import { isProtected, PathRefused, resolveInside } from './paths.js';

/** What became of a diff: the engine's command statuses. */
export type DiffOutcome =
  | { status: 'succeeded' | 'planned'; output?: string }
  | { status: 'failed' | 'skipped'; error: string; output?: string };

/** How a diff is applied. */
export interface DiffOptions {
  git: PatchGit;
  patterns: readonly string[];
  protectedAction: 'error' | 'skip' | 'log';
  dryRun: boolean;
}

/** A regular file's mode: the only kind of file a diff may create or change. */
const regularMode = /^0*100[0-7]{3}$/;

/**
 * Applies a unified diff inside `root` (a real path), after checking every path git will
 * write, read two ways: by the engine's port of git's own header parser (`diff --git`,
 * `---`/`+++`, rename and copy lines, C-quoted or not, binary patches) and by git itself
 * (`git apply --numstat`, forwards and reversed, which does not write); a name git reads
 * that the port does not is refused, and so is a diff in which neither finds a file. Each
 * path must resolve inside the workspace through the files on disk (symlinks followed,
 * untracked and ignored ones included: git's own check looks at the index) and not be
 * protected; no path may be or become a symlink or a submodule. Then `git apply`, which
 * also refuses to write beyond a symlink on disk; only when it does not apply, in a
 * repository, `git apply --3way`, which merges through the index.
 */
export async function applyDiff(root: string, diff: string, options: DiffOptions): Promise<DiffOutcome> {
  const { git } = options;
  const dir = await mkdtemp(join(tmpdir(), 'codefleet-diff-'));
  try {
    const file = join(dir, 'patch.diff');
    await writeFile(file, diff.endsWith('\n') ? diff : `${diff}\n`);
    const inRepo = await isRepository(root, git);
    const checked = await checkPaths(root, diff, file, git, inRepo);
    if ('gitRefuses' in checked) return { status: 'failed', error: `the diff does not apply: ${checked.gitRefuses}` };
    const { paths } = checked;
    const touched = paths.filter((p) => isProtected(p, options.patterns));
    if (touched.length > 0 && options.protectedAction !== 'log') {
      return { status: options.protectedAction === 'skip' ? 'skipped' : 'failed', error: `protected file ${touched.join(', ')}` };
    }
    if (options.dryRun) return { status: 'planned' };
    const warning = touched.length > 0 ? `warning: protected file ${touched.join(', ')} changed\n` : '';
    const plain = await git.run(['apply', '--whitespace=nowarn', file]);
    if (plain.exitCode === 0 && !plain.timedOut) return { status: 'succeeded', output: warning + plain.outputTail };
    const merged = inRepo && !plain.timedOut ? await git.run(['apply', '--3way', '--whitespace=nowarn', file]) : plain;
    if (merged.exitCode === 0 && !merged.timedOut) return { status: 'succeeded', output: warning + merged.outputTail };
    const why = merged.timedOut ? 'git apply timed out' : merged.outputTail.trim().split('\n')[0] ?? '';
    return { status: 'failed', error: `the diff does not apply: ${why}`, output: merged.outputTail };
  } catch (error) {
    if (error instanceof PathRefused) return { status: 'failed', error: error.message };
    if (error instanceof DiffUnreadable) return { status: 'failed', error: `the diff is refused: ${error.message}` };
    throw error;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Every path the diff names, checked (or throws why not); or git's reason when git cannot read the diff at all. */
async function checkPaths(root: string, diff: string, file: string, git: PatchGit, inRepo: boolean): Promise<{ paths: string[] } | { gitRefuses: string }> {
  const files = readDiff(diff);
  if (files.length === 0) throw new DiffUnreadable('no file header the checker understands (diff --git, or ---/+++ followed by @@)');
  const paths = [...new Set(files.flatMap((f) => f.paths))];
  const odd = files.flatMap((f) => f.modes).find((mode) => !regularMode.test(mode));
  if (odd !== undefined) throw new DiffUnreadable(`mode ${odd}: a diff may only create or change regular files, not symlinks or submodules`);

  // git's own reading: the names it will write, and the modes it will give.
  const forward = await git.list(['apply', '--numstat', '-z', file]);
  if (forward.exitCode !== 0) return { gitRefuses: forward.stderr.trim().split('\n')[0] || `git apply --numstat exit ${forward.exitCode ?? forward.spawnError ?? '?'}` };
  const reverse = await git.list(['apply', '--numstat', '-z', '-R', file]);
  const summary = await git.list(['apply', '--summary', file]);
  if (reverse.exitCode !== 0 || summary.exitCode !== 0) throw new DiffUnreadable('git cannot read the diff reversed or summarised');
  const gitNames = [...numstatNames(forward.stdout), ...numstatNames(reverse.stdout)];
  const unseen = gitNames.filter((name) => !paths.includes(name));
  if (unseen.length > 0) throw new DiffUnreadable(`git reads file names the checker does not: ${unseen.slice(0, 5).map((n) => JSON.stringify(n)).join(', ')}`);
  const gitModes = [...summary.stdout.matchAll(/^ (?:(?:create|delete) mode (\S+)|mode change (\S+) => (\S+))/gm)].flatMap((m) => m.slice(1).filter(Boolean));
  const oddMode = gitModes.find((mode) => !regularMode.test(mode ?? ''));
  if (oddMode !== undefined) throw new DiffUnreadable(`mode ${oddMode}: a diff may only create or change regular files, not symlinks or submodules`);

  for (const path of paths) {
    const absolute = await resolveInside(root, path);
    if ((await lstat(absolute).catch(() => undefined))?.isSymbolicLink()) throw new PathRefused(path, 'is a symlink; a diff does not change symlinks');
  }
  if (inRepo) {
    const staged = await git.list(['--literal-pathspecs', 'ls-files', '--stage', '-z', '--', ...paths]);
    if (staged.exitCode !== 0) throw new DiffUnreadable(`git ls-files failed: ${staged.stderr.trim().split('\n')[0] ?? ''}`);
    for (const entry of staged.stdout.split('\0')) {
      const [info = '', path = ''] = entry.split('\t');
      if (paths.includes(path) && !regularMode.test(info.split(' ')[0] ?? '')) throw new PathRefused(path, 'is a symlink or submodule in the index; a diff does not change those');
    }
  }
  return { paths };
}

/** Names from `git apply --numstat -z`: `added\tdeleted\tname` records. */
function numstatNames(stdout: string): string[] {
  return stdout.split('\0').filter((r) => r !== '').map((record) => record.split('\t').slice(2).join('\t'));
}

async function isRepository(root: string, git: PatchGit): Promise<boolean> {
  const top = await git.list(['rev-parse', '--show-toplevel']);
  return top.exitCode === 0 && top.stdout.trim() === root;
}
