// A worker killed while its push was in flight: the push lands after the worker died, and
// the job, redelivered to another worker, must end with one pull request on the task's
// own work instead of a dead letter. The first delivery is real up to its push, which never
// returns (the worker is gone); the orphaned push then lands at a chosen moment of the
// redelivery: after it read its lease, before its push (at the forge seam), or while its
// push is received (a pre-receive hook on the origin). No sleeps: every ordering is forced.
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { pushedShaOf, type EnsureBranchRequest, type Forge } from '@codefleet/forge';
import { git } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import type { Job } from '@codefleet/core';
import { runJob } from '../src/index.js';
import { createHarness, implementsFeature, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

/** `forge` with its `ensureBranch` replaced; every other call goes through. */
function withEnsureBranch(forge: Forge, ensureBranch: Forge['ensureBranch']): Forge {
  return {
    kind: forge.kind,
    remoteUrl: (repo) => forge.remoteUrl(repo),
    findBranch: (repo, branch, signal) => forge.findBranch(repo, branch, signal),
    ensureBranch,
    ensurePullRequest: (req) => forge.ensurePullRequest(req),
    findPullRequest: (repo, head) => forge.findPullRequest(repo, head),
    getPullRequest: (repo, number) => forge.getPullRequest(repo, number),
    pullRequestState: (repo, number, signal) => forge.pullRequestState(repo, number, signal),
  };
}

/**
 * Runs the first delivery of `job` up to its push, and leaves it there: its worker is
 * killed with the push in flight. Resolves to that push (a git dir holding the commit, and
 * its sha), which the test lands on the origin when it chooses.
 */
async function deliveryKilledAtPush(
  harness: Harness,
  job: Job,
): Promise<Required<Pick<EnsureBranchRequest, 'workdir' | 'sha'>>> {
  let pushing!: (req: EnsureBranchRequest) => void;
  const push = new Promise<EnsureBranchRequest>((resolve) => {
    pushing = resolve;
  });
  const forge = withEnsureBranch(harness.forge, (req) => {
    pushing(req);
    return new Promise(() => {});
  });
  void runJob(
    { ...harness.deps, forge },
    { job, attempt: 1, workerId: 'killed', signal: new AbortController().signal },
  );
  const req = await push;
  if (req.sha === undefined) throw new Error('the pipeline pushes an explicit sha');
  return { workdir: req.workdir, sha: req.sha };
}

/** Lands the dead worker's push: `git push` of its commit, as its git process would have. */
async function land(harness: Harness, orphan: { workdir: string; sha: string }, ref: string): Promise<void> {
  await git(harness.dir.path, ['--git-dir', orphan.workdir, 'push', '--quiet', harness.origin, `${orphan.sha}:${ref}`]);
}

/** Makes the origin move `branch` to `sha` while the next push is received; `sha` must be there already. */
async function landDuringNextPush(harness: Harness, branch: string, sha: string): Promise<void> {
  const hook = join(harness.origin, 'hooks', 'pre-receive');
  // Outside the quarantine git refuses ref updates; the hook fires once.
  await writeFile(
    hook,
    `#!/bin/sh\nrm -f "$0"\nunset GIT_QUARANTINE_PATH\ngit update-ref refs/heads/${branch} ${sha}\ncat >/dev/null\n`,
  );
  await chmod(hook, 0o755);
}

/**
 * Redelivers `job` (attempt 2, another worker) with the orphaned push landing as `ordering`
 * says, after the redelivery's workspace read the branch (absent: its lease says "must not exist").
 */
async function redeliver(
  harness: Harness,
  job: Job,
  orphan: { workdir: string; sha: string },
  ordering: 'landed before' | 'landing during',
) {
  const branch = branchName(job);
  let forge: Forge = harness.forge;
  if (ordering === 'landed before') {
    forge = withEnsureBranch(harness.forge, async (req) => {
      await land(harness, orphan, `refs/heads/${branch}`);
      return harness.forge.ensureBranch(req);
    });
  } else {
    await land(harness, orphan, `refs/orphans/${branch}`);
    await landDuringNextPush(harness, branch, orphan.sha);
  }
  return runJob(
    { ...harness.deps, forge },
    { job, attempt: 2, workerId: 'redelivered', signal: new AbortController().signal },
  );
}

const tipOf = (harness: Harness, branch: string) =>
  git(harness.dir.path, ['--git-dir', harness.origin, 'rev-parse', `refs/heads/${branch}`]);

describe('a push that lands after its worker died converges on redelivery', () => {
  for (const ordering of ['landed before', 'landing during'] as const) {
    it(`the orphaned push ${ordering} the redelivery's, same content: one PR naming the dead worker's commit`, async () => {
      h = await createHarness();
      await h.agent(implementsFeature);
      const job = h.job({ title: 'Add two()' });
      const branch = branchName(job);
      const orphan = await deliveryKilledAtPush(h, job);
      const result = await redeliver(h, job, orphan, ordering);
      expect(result.run).toMatchObject({ stage: 'done', outcome: 'succeeded' });
      expect(result.action).toBe('ack');
      // The branch keeps the earlier attempt's commit: its tree is what this attempt verified.
      expect(await tipOf(h, branch)).toBe(orphan.sha);
      const pr = await h.forge.findPullRequest(job.repo, branch);
      expect(pr).toMatchObject({ state: 'open', draft: false, headSha: orphan.sha });
      expect(pushedShaOf(pr!.body)).toBe(orphan.sha);
      expect(await h.forge.pullRequestCreations(job.repo, branch)).toBe(1);
    });

    it(`the orphaned push ${ordering} the redelivery's, other content: this attempt's verified commit replaces it`, async () => {
      h = await createHarness();
      // Each attempt writes its own variant: an agent rarely writes the same thing twice.
      await h.agent(
        implementsFeature.replace(
          "'export const two = () => 2;\\n'",
          '`export const two = () => 2; // run ${runs}\\n`',
        ),
      );
      const job = h.job({ title: 'Add two()' });
      const branch = branchName(job);
      const orphan = await deliveryKilledAtPush(h, job);
      const result = await redeliver(h, job, orphan, ordering);
      expect(result.run).toMatchObject({ stage: 'done', outcome: 'succeeded' });
      const tip = await tipOf(h, branch);
      expect(tip).not.toBe(orphan.sha);
      // What the branch and the pull request hold is what the redelivery verified.
      expect(await git(h.dir.path, ['--git-dir', h.origin, 'show', `${tip}:src/lib.js`])).toContain('// run 3');
      expect(await git(h.dir.path, ['--git-dir', h.origin, 'show', `${orphan.sha}:src/lib.js`])).toContain('// run 1');
      const pr = await h.forge.findPullRequest(job.repo, branch);
      expect(pushedShaOf(pr!.body)).toBe(tip);
      expect(await h.forge.pullRequestCreations(job.repo, branch)).toBe(1);
    });
  }

  it('a branch somebody else pushed to meanwhile is not overwritten: git_conflict, dead letter, no PR', async () => {
    h = await createHarness();
    await h.agent(implementsFeature);
    const job = h.job({ title: 'Add two()' });
    const branch = branchName(job);
    // A person's commit, other content and no trailer, lands where the dead worker's would have.
    const person = join(h.dir.path, 'person');
    await git(h.dir.path, ['clone', '--quiet', h.origin, person]);
    await writeFile(join(person, 'NOTES.md'), 'mine\n');
    await git(person, ['add', 'NOTES.md']);
    await git(person, ['commit', '--quiet', '-m', 'Notes']);
    const theirs = await git(person, ['rev-parse', 'HEAD']);
    const result = await redeliver(h, job, { workdir: join(person, '.git'), sha: theirs }, 'landed before');
    expect(result).toMatchObject({ action: 'dead_letter', run: { stage: 'failed', error: { code: 'git_conflict' } } });
    expect(await tipOf(h, branch)).toBe(theirs);
    expect(await h.forge.findPullRequest(job.repo, branch)).toBeUndefined();
  });
});
