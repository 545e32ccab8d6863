import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '@codefleet/process';

/** The commit subject prefix of the engine's own commits (PC: `[Worker Auto-Commit]`). */
export const autoCommitPrefix = '[Worker Auto-Commit]';

const identity = { GIT_AUTHOR_NAME: 'codefleet patch', GIT_AUTHOR_EMAIL: 'patch@codefleet.invalid', GIT_COMMITTER_NAME: 'codefleet patch', GIT_COMMITTER_EMAIL: 'patch@codefleet.invalid' };

async function git(root: string, args: string[], env: Record<string, string>, timeoutMs: number) {
  return runProcess(['git', ...args], { cwd: root, env: { GIT_TERMINAL_PROMPT: '0', ...identity, ...env }, timeoutMs });
}

/** Commits everything as it is (empty commits allowed); resolves to the new HEAD, or throws with git's words. */
export async function autoCommit(root: string, subject: string, env: Record<string, string>, timeoutMs: number): Promise<string> {
  const add = await git(root, ['add', '--all'], env, timeoutMs);
  if (add.exitCode !== 0) throw new Error(`auto-commit: git add failed: ${add.outputTail.trim()}`);
  const commit = await git(root, ['commit', '--quiet', '--no-verify', '--no-gpg-sign', '--allow-empty', '-m', `${autoCommitPrefix} ${subject}`], env, timeoutMs);
  if (commit.exitCode !== 0) throw new Error(`auto-commit: git commit failed: ${commit.outputTail.trim()}`);
  const head = await git(root, ['rev-parse', 'HEAD'], env, timeoutMs);
  return head.outputTail.trim().split('\n').at(-1) ?? '';
}

/** Puts the workspace back at `sha`: tracked files reset, files the patch added removed. */
export async function rollback(root: string, sha: string, env: Record<string, string>, timeoutMs: number): Promise<void> {
  const reset = await git(root, ['reset', '--hard', '--quiet', sha], env, timeoutMs);
  if (reset.exitCode !== 0) throw new Error(`rollback: git reset failed: ${reset.outputTail.trim()}`);
  await git(root, ['clean', '-fd', '--quiet'], env, timeoutMs);
}

/**
 * Applies a unified diff with `git apply` (`--3way` in a repository, so a hunk that no
 * longer matches can still merge); the diff goes through a file outside the workspace.
 */
export async function applyDiff(root: string, diff: string, env: Record<string, string>, timeoutMs: number): Promise<{ ok: boolean; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'codefleet-diff-'));
  try {
    const file = join(dir, 'patch.diff');
    await writeFile(file, diff.endsWith('\n') ? diff : `${diff}\n`);
    const inRepo = (await git(root, ['rev-parse', '--is-inside-work-tree'], env, timeoutMs)).exitCode === 0;
    const result = await git(root, ['apply', ...(inRepo ? ['--3way'] : []), '--whitespace=nowarn', file], env, timeoutMs);
    return { ok: result.exitCode === 0, output: result.outputTail };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
