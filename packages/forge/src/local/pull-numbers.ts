// Pull request numbers of the local forge, claimed in the origin repository itself. The
// SQLite file that keeps the pull requests belongs to one host's data directory, so two
// workers of a Redis or SQS fleet once numbered the same repository's pull requests
// independently (two #1s). Every worker pushes to the origin, so the origin is where a
// number is claimed: `refs/codefleet/pulls/<n>`, created only if absent (see
// createRemoteRef), is atomic across processes and hosts, as a counter must be.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import { runProcess } from '@codefleet/process';
import { createRemoteRef, remoteRefs, type GitOptions } from '../git/git.js';

/** Where claimed numbers live in the origin. */
const pullNumberRefs = 'refs/codefleet/pulls/';

/** Claims lost to other workers before giving up (each loss means another PR was numbered). */
const maxClaims = 64;

/**
 * Claims the lowest pull request number of `remote` above every claimed one and above
 * `atLeast - 1` (numbers this host gave before numbers were claimed in the origin). A
 * number claimed by a worker that then dies, or loses the race to open the same head, stays
 * unused: numbers are unique, not gapless (GitHub's are not either).
 */
export async function claimPullNumber(
  git: GitOptions,
  remote: string,
  atLeast: number,
  signal?: AbortSignal,
): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'codefleet-pull-'));
  try {
    await runGit(git, dir, ['init', '--quiet', '--bare', dir], signal);
    let next = Math.max(atLeast, highestClaimed(await remoteRefs(git, remote, pullNumberRefs, signal)) + 1);
    for (let claims = 0; claims < maxClaims; claims += 1, next += 1) {
      // A unique object per claim: a ref already holding the same one would read as created.
      const oid = await claimObject(git, dir, `codefleet pull request #${next}\n${randomUUID()}\n`, signal);
      const outcome = await createRemoteRef(git, {
        gitDir: dir,
        remote,
        ref: `${pullNumberRefs}${next}`,
        oid,
        ...(signal === undefined ? {} : { signal }),
      });
      if (outcome === 'created') return next;
    }
    throw new CodefleetError(
      'forge_unavailable',
      `could not claim a pull request number in ${remote}: ${maxClaims} numbers in a row were taken by other workers`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function highestClaimed(refs: Map<string, string>): number {
  let highest = 0;
  for (const ref of refs.keys()) {
    const n = Number(ref.slice(pullNumberRefs.length));
    if (Number.isSafeInteger(n) && n > highest) highest = n;
  }
  return highest;
}

async function claimObject(
  git: GitOptions,
  dir: string,
  content: string,
  signal: AbortSignal | undefined,
): Promise<string> {
  const file = join(dir, 'claim');
  await writeFile(file, content);
  const oid = (await runGit(git, dir, ['hash-object', '-w', '--', file], signal)).trim().split('\n').at(-1) ?? '';
  if (!/^[0-9a-f]{40,64}$/.test(oid)) throw new CodefleetError('git_failed', 'git hash-object printed no object id');
  return oid;
}

async function runGit(
  git: GitOptions,
  cwd: string,
  args: readonly string[],
  signal: AbortSignal | undefined,
): Promise<string> {
  const result = await runProcess([git.gitPath ?? 'git', ...args], {
    cwd,
    env: { GIT_CONFIG_NOSYSTEM: '1', ...git.env, GIT_DIR: cwd },
    timeoutMs: git.timeoutMs,
    ...(signal === undefined ? {} : { signal }),
  });
  if (result.exitCode !== 0)
    throw new CodefleetError(
      'git_failed',
      `git ${args[0]} failed in ${cwd}: ${result.outputTail.trim().split('\n').at(-1) ?? ''}`,
    );
  return result.outputTail;
}
