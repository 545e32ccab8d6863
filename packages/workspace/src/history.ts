import { realpath, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import type { Git } from './git.js';
import { removeTree } from './remove-tree.js';

/** Where a pinned job's own object store lives: beside its copy, like its view. */
export function historyDir(copyDir: string): string {
  return `${copyDir}.history`;
}

/**
 * Writes the object store a pinned job's runs read in place of the mirror's: `startSha` and
 * its history, nothing else. The mirror holds every branch (later commits, other jobs' work
 * branches); a job replaying an old commit must not find the fix it is asked for there.
 * Made by lending the store the mirror's objects once, packing what its one ref reaches
 * (`repack -a` copies borrowed objects) and ending the loan. Resolves to its `objects`
 * directory. Costs a pack of the whole history up to `startSha`: the price of an honest
 * replay, paid by pinned jobs only.
 */
export async function writeHistory(
  git: Git,
  opts: { copyDir: string; mirrorDir: string; startSha: string; signal?: AbortSignal | undefined },
): Promise<string> {
  const { signal } = opts;
  const dir = historyDir(opts.copyDir);
  await removeTree(dir);
  await git.run(['init', '--quiet', '--bare', dir], { cwd: dirname(dir), signal });
  const alternates = join(dir, 'objects', 'info', 'alternates');
  await writeFile(alternates, `${await realpath(join(opts.mirrorDir, 'objects'))}\n`);
  await git.run(['update-ref', 'refs/heads/start', opts.startSha], { cwd: dir, signal });
  await git.run(['repack', '-a', '-d', '-q'], { cwd: dir, signal });
  await rm(alternates);
  // Checked, not assumed: without the loan, the store alone must hold the start and its tree.
  const complete = await git.run(['cat-file', '-e', `${opts.startSha}^{tree}`], {
    cwd: dir,
    signal,
    okExitCodes: [1, 128],
  });
  if (complete.exitCode !== 0)
    throw new CodefleetError(
      'workspace_failed',
      `the history of ${opts.startSha} could not be copied out of the mirror`,
    );
  return join(dir, 'objects');
}
