import type { PatchGit } from './git.js';

/** The commit subject prefix of the engine's own commits (default `[Worker Auto-Commit]`). */
const autoCommitPrefix = '[Worker Auto-Commit]';

/** Commits everything as it is (empty commits allowed); resolves to the new HEAD, or throws with git's words. */
export async function autoCommit(git: PatchGit, subject: string): Promise<string> {
  const add = await git.run(['add', '--all']);
  if (add.exitCode !== 0) throw new Error(`auto-commit: git add failed: ${add.outputTail.trim()}`);
  const commit = await git.run([
    'commit',
    '--quiet',
    '--no-verify',
    '--no-gpg-sign',
    '--allow-empty',
    '-m',
    `${autoCommitPrefix} ${subject}`,
  ]);
  if (commit.exitCode !== 0) throw new Error(`auto-commit: git commit failed: ${commit.outputTail.trim()}`);
  const head = await git.list(['rev-parse', '--verify', 'HEAD']);
  const sha = head.stdout.trim();
  if (head.exitCode !== 0 || !/^[0-9a-f]{40,64}$/.test(sha))
    throw new Error(`auto-commit: no HEAD after the commit: ${head.stderr.trim()}`);
  return sha;
}

/**
 * Files and directories git ignores, as `ls-files --directory` lists them (an ignored
 * directory as one `dir/` entry, not its contents): what the before-commit does not hold.
 */
export async function ignoredEntries(git: PatchGit): Promise<Set<string>> {
  const listing = await git.list(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory']);
  if (listing.exitCode !== 0) throw new Error(`listing ignored files failed: ${listing.stderr.trim()}`);
  return new Set(listing.stdout.split('\0').filter((entry) => entry !== ''));
}

/**
 * Puts the workspace back at `sha`: tracked files reset, files the patch added removed,
 * and, given what was ignored before (`ignoredBefore`), ignored files and directories the
 * patch added removed too (`git clean -x` would also take the ones that were there:
 * node_modules, build output). Ignored files the patch changed are the caller's to restore.
 */
export async function rollback(git: PatchGit, sha: string, ignoredBefore?: ReadonlySet<string>): Promise<void> {
  const reset = await git.run(['reset', '--hard', '--quiet', sha]);
  if (reset.exitCode !== 0) throw new Error(`rollback: git reset failed: ${reset.outputTail.trim()}`);
  await git.run(['clean', '-fd', '--quiet']);
  if (ignoredBefore === undefined) return;
  const added = [...(await ignoredEntries(git))].filter((entry) => !ignoredBefore.has(entry));
  // `-X` removes ignored files only; the names are passed literally, each one listed by git.
  if (added.length > 0) await git.run(['--literal-pathspecs', 'clean', '-fdX', '--quiet', '--', ...added]);
}
