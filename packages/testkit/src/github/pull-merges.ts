import { createTempDir } from '../temp-dir.js';
import { git, writeFiles } from '../git-repo.js';
import type { RepoState, StandInPull } from './state.js';

// What a person does to the GitHub STAND-IN outside the API: pushes a branch, opens a pull
// request from it, merges it with the website's button.

/** In a scratch clone of `state`'s bare repository at `branch`: `work` runs there, then it is removed. */
async function inClone<T>(
  state: RepoState,
  branch: string,
  work: (run: (args: readonly string[]) => Promise<string>, dir: string) => Promise<T>,
): Promise<T> {
  const scratch = await createTempDir('github-standin-clone');
  try {
    const run = (args: readonly string[]) => git(scratch.path, args);
    await run(['clone', '--quiet', '--branch', branch, state.bareDir, '.']);
    return await work(run, scratch.path);
  } finally {
    await scratch.dispose();
  }
}

/** Pushes branch `branch`: one commit of `files` on top of `from`. Resolves its sha. */
export function pushBranch(
  state: RepoState,
  push: { branch: string; from: string; files: Record<string, string>; message: string },
): Promise<string> {
  return inClone(state, push.from, async (run, dir) => {
    await run(['checkout', '--quiet', '-b', push.branch]);
    await writeFiles(dir, push.files);
    await run(['add', '--all']);
    await run(['commit', '--quiet', '-m', push.message]);
    await run(['push', '--quiet', 'origin', `HEAD:refs/heads/${push.branch}`]);
    return run(['rev-parse', 'HEAD']);
  });
}

/** What a person opening a pull request fills in. */
export interface OpenedPullInput {
  head: string;
  base?: string;
  title: string;
  body?: string;
  user?: string;
}

/** A pull request just opened from `head` (of `headRepo`, a fork, when given), numbered as GitHub numbers issues. */
export function openedPull(
  state: RepoState,
  base: string,
  now: string,
  input: OpenedPullInput & { headRepo?: string; sha?: string },
): StandInPull {
  state.next += 1;
  const owner = (input.headRepo ?? state.fullName).split('/')[0] ?? '';
  const pull: StandInPull = {
    number: state.next,
    node_id: `PR_${state.fullName}#${state.next}`,
    title: input.title,
    body: input.body ?? '',
    ...(input.headRepo === undefined ? {} : { headRepo: input.headRepo }),
    head: { ref: input.head, label: `${owner}:${input.head}`, ...(input.sha === undefined ? {} : { sha: input.sha }) },
    base: { ref: input.base ?? 'main' },
    draft: false,
    state: 'open',
    html_url: `${base}/${state.fullName}/pull/${state.next}`,
    labels: [],
    user: { login: input.user ?? (input.headRepo === undefined ? 'octocat' : 'mallory') },
    locked: false,
    created_at: now,
    updated_at: now,
    merged_at: null,
  };
  state.pulls.set(pull.number, pull);
  return pull;
}

/** How GitHub's merge button lands a pull request: a merge commit, or one squashed commit. */
export type MergeMethod = 'merge' | 'squash';

/**
 * Lands `pull`'s head on its base in the bare repository with the commit GitHub's button
 * writes: `Merge pull request #N from owner/head` with the title below it, or the squash's
 * `title (#N)`. Resolves that commit's sha, GitHub's `merge_commit_sha`.
 */
export function landPull(state: RepoState, pull: StandInPull, method: MergeMethod): Promise<string> {
  return inClone(state, pull.base.ref, async (run) => {
    const head = `origin/${pull.head.ref}`;
    if (method === 'merge') {
      const from = `${state.fullName.split('/')[0] ?? ''}/${pull.head.ref}`;
      await run([
        'merge',
        '--quiet',
        '--no-ff',
        '-m',
        `Merge pull request #${pull.number} from ${from}`,
        '-m',
        pull.title,
        head,
      ]);
    } else {
      await run(['merge', '--quiet', '--squash', head]);
      await run(['commit', '--quiet', '-m', `${pull.title} (#${pull.number})`]);
    }
    await run(['push', '--quiet', 'origin', `HEAD:refs/heads/${pull.base.ref}`]);
    return run(['rev-parse', 'HEAD']);
  });
}
