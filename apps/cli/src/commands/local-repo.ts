import { realpath, stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { runProcess } from '@codefleet/process';
import { fsProblem } from '../fs-problem.js';

/** How long `enqueue` waits for git to look at a local repository. */
const gitTimeoutMs = 10_000;

/**
 * Why the directory `path` cannot be a job's repository, or undefined when git finds a
 * repository there: a working tree's top directory, a bare repository or a `.git`
 * directory, as a worker's fetch will need it. Git runs with an argument array and a timeout.
 */
export async function checkLocalRepo(path: string, gitEnv: Record<string, string>): Promise<string | undefined> {
  try {
    if (!(await stat(path)).isDirectory()) return 'not a directory';
  } catch (error) {
    return fsProblem(error);
  }
  const result = await runProcess(['git', '-C', path, 'rev-parse', '--git-dir', '--show-cdup'], {
    cwd: path,
    env: gitEnv,
    timeoutMs: gitTimeoutMs,
  });
  if (result.spawnError !== undefined) return `git could not run to check it: ${result.spawnError}`;
  if (result.timedOut) return `git did not answer within ${gitTimeoutMs / 1000} s`;
  const lines = result.outputTail.replace(/\n$/, '').split('\n');
  if (result.exitCode !== 0) {
    const said =
      lines.find((l) => l.startsWith('fatal:')) ?? lines.find((l) => l.trim() !== '') ?? `exit ${result.exitCode}`;
    const why = said.replace(/^fatal: /, '').trim();
    return why.startsWith('not a git repository')
      ? 'not a git repository'
      : `git cannot use it as a repository: ${why}`;
  }
  // In a working tree, --show-cdup prints the way up to its top ("" at the top); in a git
  // directory it prints nothing, and --git-dir is "." unless `path` is below that directory.
  const [gitDir = '', cdup] = lines;
  if (cdup !== undefined && cdup !== '') {
    return `is a subdirectory of the git repository ${resolve(path, cdup)}; give that directory`;
  }
  if (
    cdup === undefined &&
    isAbsolute(gitDir) &&
    (await realpath(gitDir).catch(() => gitDir)) !== (await realpath(path).catch(() => path))
  ) {
    return `is inside the git directory ${gitDir}; give that directory`;
  }
  return emptyProblem(path, gitEnv);
}

/** A repository with no branch has nothing to start from: a worker would refuse it (permanent). */
async function emptyProblem(path: string, gitEnv: Record<string, string>): Promise<string | undefined> {
  const result = await runProcess(
    ['git', '-C', path, 'for-each-ref', '--count=1', '--format=%(refname)', 'refs/heads/'],
    { cwd: path, env: gitEnv, timeoutMs: gitTimeoutMs },
  );
  if (result.exitCode !== 0 || result.outputTail.trim() !== '') return undefined;
  return 'the repository is empty: it has no commits and no branch to start from; push a first commit (e.g. a README) to it';
}
