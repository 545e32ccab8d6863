import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readlink, realpath, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import { viewDir } from './agent-view.js';
import { copyWorktreeRules, guardConfigFile } from './config-guard.js';
import { lastObjectId } from './git.js';
import { guardMirrorConfig } from './mirror.js';
import { ownGitDir, withPathspecFile, type OpenCopy } from './open-copy.js';
import { refuseConvertedBlobs } from './raw-content.js';
import { locked } from './working-copy.js';

/** See `Workspace.commit`. */
export async function commitChange(
  copy: OpenCopy,
  message: string,
  author: { name: string; email: string },
): Promise<string | undefined> {
  const { ctx, paths } = copy;
  await copy.restore();
  const gitDir = await ownGitDir(copy, 'nothing committed');
  await locked(ctx, () => guardMirrorConfig(ctx.git, ctx.mirrorDir, copy.repoUrl, ctx.signal));
  await guardConfigFile(ctx.git, join(gitDir, 'config.worktree'), copyWorktreeRules, ctx.signal);
  const allowed = (await copy.changedSince('HEAD')).filter((file) => !copy.outOfScope(file));
  await refuseHugeFiles(paths.dir, allowed);
  // Only what the agent may change: a fresh index, then exactly those paths, passed
  // through a file (no argv length limit) and taken literally (no glob magic).
  await copy.git(['reset', '--quiet']);
  if (allowed.length > 0) await withPathspecFile(copy, gitDir, 'codefleet-commit-paths', allowed, ['add', '--all']);
  const staged = await copy.git(['diff', '--cached', '--quiet'], { okExitCodes: [1] });
  if (staged.exitCode === 0) return undefined;
  const identity = {
    GIT_AUTHOR_NAME: author.name,
    GIT_AUTHOR_EMAIL: author.email,
    GIT_COMMITTER_NAME: author.name,
    GIT_COMMITTER_EMAIL: author.email,
  };
  await copy.git(['commit', '--quiet', '--no-verify', '--no-gpg-sign', '-m', message], { env: identity });
  await refuseConvertedBlobs(ctx.git, paths.dir, ctx.signal);
  return lastObjectId(await ctx.git.stdout(['rev-parse', 'HEAD'], { cwd: paths.dir }));
}

/** See `Workspace.pushSource`. */
export async function pushSource(copy: OpenCopy): Promise<{ gitDir: string; sha: string }> {
  const { ctx } = copy;
  const sha = lastObjectId(await ctx.git.stdout(['rev-parse', `refs/heads/${copy.branch}`], { cwd: ctx.mirrorDir }));
  if (sha === undefined)
    throw new CodefleetError('workspace_failed', `the work branch ${copy.branch} has no commit to push`);
  const gitDir = join(viewDir(copy.paths.dir), 'push.git');
  await rm(gitDir, { recursive: true, force: true });
  await ctx.git.run(['init', '--quiet', '--bare', gitDir], { cwd: ctx.mirrorDir, signal: ctx.signal });
  await writeFile(join(gitDir, 'objects', 'info', 'alternates'), `${await realpath(join(ctx.mirrorDir, 'objects'))}\n`);
  return { gitDir, sha };
}

/** See `Workspace.fingerprint`. */
export async function fingerprint(copy: OpenCopy): Promise<string> {
  const hash = createHash('sha256');
  const files = await copy.changedSince(copy.forkSha);
  // Too large to commit is refused before hashing: a sparse file of a terabyte would
  // otherwise hold the worker for hours.
  await refuseHugeFiles(copy.paths.dir, files);
  for (const file of files) {
    if (copy.ctx.signal?.aborted) throw new CodefleetError('cancelled', 'stopped while fingerprinting the change');
    const path = join(copy.paths.dir, file);
    const info = await lstat(path).catch(() => undefined);
    // Streamed, not read whole: a changed file may be large.
    const content =
      info === undefined
        ? 'deleted'
        : info.isSymbolicLink()
          ? `link:${await readlink(path)}`
          : info.isFile()
            ? await fileHash(path)
            : `type:${info.mode}`;
    hash.update(`${file}\0${content}\0`);
  }
  return hash.digest('hex');
}

async function fileHash(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Larger files are never committed: GitHub refuses them, and git would copy them into the shared mirror first. */
const maxCommittedFileBytes = 100 * 1024 * 1024;

/** Checked before `git add`, which would write the whole file into the mirror's object store. */
async function refuseHugeFiles(dir: string, files: readonly string[]): Promise<void> {
  for (const file of files) {
    const info = await lstat(join(dir, file)).catch(() => undefined);
    if (info?.isFile() && info.size > maxCommittedFileBytes) {
      throw new CodefleetError(
        'forge_rejected',
        `${file} is ${Math.round(info.size / 1024 / 1024)} MB; files over ${maxCommittedFileBytes / 1024 / 1024} MB are not committed (GitHub refuses them). Nothing was committed`,
        {
          verdict: 'permanent',
          details: { file, bytes: info.size },
        },
      );
    }
  }
}
