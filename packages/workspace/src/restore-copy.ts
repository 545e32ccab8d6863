import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { splitNul } from './git.js';
import { ownGitDir, removeInsideCopy, withPathspecFile, type OpenCopy } from './open-copy.js';
import { codefleetDir, keptDependencyDirs, leftoverGitState, listingBytes } from './working-copy.js';

/** See `Workspace.resetToStart`. */
export async function resetToStart(copy: OpenCopy): Promise<void> {
  await copy.restore();
  const gitDir = await ownGitDir(copy, 'not reset');
  // An agent's interrupted git command (a rebase, a lock) would stop the reset.
  for (const name of leftoverGitState) await rm(join(gitDir, name), { recursive: true, force: true });
  await copy.git(['reset', '--hard', '--quiet', copy.startSha]);
  const keep = [
    ...copy.contextFiles.map((file) => `/${file}`),
    `/${codefleetDir}/`,
    ...keptDependencyDirs.map((name) => `${name}/`),
  ];
  await copy.git(['clean', '-ffd', '--quiet', ...keep.flatMap((pattern) => ['-e', pattern])]);
}

/** See `Workspace.restoreFiles`. */
export async function restoreFiles(copy: OpenCopy, files: readonly string[]): Promise<void> {
  if (files.length === 0) return;
  await copy.restore();
  const inHead = new Set(
    splitNul(
      await copy.ctx.git.stdout(['ls-tree', '-r', '-z', '--name-only', 'HEAD'], {
        cwd: copy.paths.dir,
        maxBytes: listingBytes,
      }),
    ),
  );
  const tracked = files.filter((file) => inHead.has(file));
  for (const file of files.filter((file) => !inHead.has(file))) await removeInsideCopy(copy.paths.dir, file);
  if (tracked.length === 0) return;
  await withPathspecFile(copy, copy.gitDir, 'codefleet-restore-paths', tracked, ['checkout', 'HEAD']);
}
