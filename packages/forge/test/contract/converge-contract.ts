/**
 * Part of the forge contract: `ensureBranch` after a crash. A worker killed while its push
 * was in flight leaves a push that lands after it died; the redelivered job, holding a lease
 * read before that, must converge on it when it is the same task's work, and must still
 * never overwrite anybody else's. Both orderings run: the orphaned push landed before the
 * redelivery pushes (git's lease says `stale info`), and it lands during the redelivery's
 * push (the server's compare-and-swap says "reference already exists"), made deterministic
 * by a pre-receive hook on the origin that moves the branch while the push is received.
 */
import { randomBytes } from 'node:crypto';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { git, writeFiles } from '@codefleet/testkit';
import { ownStaleTip } from '../../src/git/git.js';
import { taskTrailer, taskTrailerValue } from '../../src/git/task-trailer.js';
import type { Forge } from '../../src/port.js';

/** What these tests use of the contract's `OpenedOrigin`. */
interface OpenedOrigin {
  forge: Forge;
  repo: string;
  /** The bare repository behind the forge, on this host. */
  originDir: string;
  /** A clone on a new local `branch` from `main`, with one commit of its own. */
  makeWorkdir(branch: string): Promise<string>;
}

type Ordering = 'landed before' | 'landing during';

/** Registers the convergence tests; `open` gives a fresh origin and forge (disposed by the caller). */
export function convergeContract(open: () => Promise<OpenedOrigin>): void {
  const branchName = () => `ai/crash-${randomBytes(4).toString('hex')}`;
  // Idempotency keys; the forge is given the trailer's value.
  const taskKey = 'acme/widgets#issue-7';
  const otherTaskKey = 'acme/widgets#issue-8';
  const task = taskTrailerValue(taskKey);

  /**
   * A commit on `main` (or with `onTop`, on `workdir`'s HEAD) writing `content`, as codefleet
   * commits for the task `key` (a fixed message); attempts differ in their commit time.
   */
  const commitFor = async (workdir: string, key: string, content: string, at: string, onTop = false) => {
    if (!onTop) await git(workdir, ['reset', '--quiet', '--hard', 'origin/main']);
    await writeFiles(workdir, { 'src/feature.js': content });
    await git(workdir, ['add', '--all']);
    await git(workdir, ['commit', '--quiet', `--date=${at}`, '-m', `Add the feature\n\n${taskTrailer(key)}`]);
    return git(workdir, ['rev-parse', 'HEAD']);
  };
  const first = '2026-01-01T10:00:00Z';
  const second = '2026-01-01T10:05:00Z';

  /**
   * The dead worker's push reaches `branch`: at once (`landed before`), or from a hook that
   * moves the branch while the next push to the origin is being received (`landing during`).
   */
  const orphanLands = async (o: OpenedOrigin, ordering: Ordering, branch: string, workdir: string, sha: string) => {
    if (ordering === 'landed before') {
      await git(workdir, ['push', '--quiet', o.originDir, `${sha}:refs/heads/${branch}`]);
      return;
    }
    // The objects arrive first (a side ref), so the hook only has to move the branch.
    await git(workdir, ['push', '--quiet', o.originDir, `${sha}:refs/orphans/${branch}`]);
    const hook = join(o.originDir, 'hooks', 'pre-receive');
    // Outside the quarantine git refuses ref updates; the hook fires once, for the next push.
    await writeFile(
      hook,
      `#!/bin/sh\nrm -f "$0"\nunset GIT_QUARANTINE_PATH\ngit update-ref refs/heads/${branch} ${sha}\ncat >/dev/null\n`,
    );
    await chmod(hook, 0o755);
  };

  for (const ordering of ['landed before', 'landing during'] as const) {
    describe(`ensureBranch after a crash: the orphaned push ${ordering} the redelivery's`, () => {
      it("converges on an earlier attempt's commit with the same tree, and names it", async () => {
        const o = await open();
        const branch = branchName();
        const dead = await o.makeWorkdir(branch);
        const earlier = await commitFor(dead, taskKey, 'export const feature = 1;\n', first);
        const retry = await o.makeWorkdir(branch);
        const ours = await commitFor(retry, taskKey, 'export const feature = 1;\n', second);
        expect(ours).not.toBe(earlier);
        await orphanLands(o, ordering, branch, dead, earlier);
        // The lease the redelivery read when it prepared: the branch did not exist.
        expect(await o.forge.ensureBranch({ repo: o.repo, workdir: retry, branch, task })).toEqual({
          sha: earlier,
          updated: false,
        });
        expect(await o.forge.findBranch(o.repo, branch)).toEqual({ sha: earlier });
        // Without the task named the same tree converges too: its content is what was verified.
        expect(await o.forge.ensureBranch({ repo: o.repo, workdir: retry, branch })).toEqual({
          sha: earlier,
          updated: false,
        });
      });

      it("names an earlier attempt's commit with other content, which a lease on it then replaces", async () => {
        const o = await open();
        const branch = branchName();
        const dead = await o.makeWorkdir(branch);
        const earlier = await commitFor(dead, taskKey, 'export const feature = 1;\n', first);
        const retry = await o.makeWorkdir(branch);
        const ours = await commitFor(retry, taskKey, 'export const feature = () => 1;\n', second);
        await orphanLands(o, ordering, branch, dead, earlier);
        const refused = await o.forge
          .ensureBranch({ repo: o.repo, workdir: retry, branch, task })
          .catch((error: unknown) => error);
        expect(refused).toMatchObject({ code: 'git_conflict' });
        expect(ownStaleTip(refused)).toBe(earlier);
        expect(await o.forge.findBranch(o.repo, branch)).toEqual({ sha: earlier });
        expect(
          await o.forge.ensureBranch({ repo: o.repo, workdir: retry, branch, task, expectedSha: earlier }),
        ).toEqual({ sha: ours, updated: true });
      });

      it("leaves another task's commit, or a person's, alone: git_conflict", async () => {
        const o = await open();
        const branch = branchName();
        const other = await o.makeWorkdir(branch);
        const foreign = await commitFor(other, otherTaskKey, 'export const feature = 2;\n', first);
        const retry = await o.makeWorkdir(branch);
        await commitFor(retry, taskKey, 'export const feature = 1;\n', second);
        await orphanLands(o, ordering, branch, other, foreign);
        const refused = await o.forge
          .ensureBranch({ repo: o.repo, workdir: retry, branch, task })
          .catch((error: unknown) => error);
        expect(refused).toMatchObject({ code: 'git_conflict' });
        expect(ownStaleTip(refused)).toBeUndefined();
        expect(await o.forge.findBranch(o.repo, branch)).toEqual({ sha: foreign });
        // The task's own commit on top of a person's: replacing the tip would drop theirs.
        await git(other, ['reset', '--quiet', '--hard', 'origin/main']);
        await writeFiles(other, { 'NOTES.md': 'a person was here\n' });
        await git(other, ['add', '--all']);
        await git(other, ['commit', '--quiet', '-m', 'Notes']);
        const mixed = await commitFor(other, taskKey, 'export const feature = 3;\n', first, true);
        await git(other, ['push', '--quiet', '--force', o.originDir, `${mixed}:refs/heads/${branch}`]);
        const again = await o.forge
          .ensureBranch({ repo: o.repo, workdir: retry, branch, task, expectedSha: foreign })
          .catch((error: unknown) => error);
        expect(again).toMatchObject({ code: 'git_conflict' });
        expect(ownStaleTip(again)).toBeUndefined();
        expect(await o.forge.findBranch(o.repo, branch)).toEqual({ sha: mixed });
      });
    });
  }
}
