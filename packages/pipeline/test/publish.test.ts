// pushWork's decision when the branch holds an earlier attempt's commit of the task: fence
// again, then replace under a lease on that commit. The forge is a test double here; the
// real forges' side of it is the forge contract's (converge-contract.ts).
import { describe, expect, it } from '@jest/globals';
import { CodefleetError, createJob, LeaseLostError } from '@codefleet/core';
import type { EnsureBranchRequest, Forge } from '@codefleet/forge';
import { silentLogger } from '@codefleet/log';
import type { Workspace } from '@codefleet/workspace';
import { pushWork } from '../src/publish.js';

const ours = 'a'.repeat(40);
const earlier = 'b'.repeat(40);
const job = createJob(
  { repo: '/srv/origin.git', source: { kind: 'cli' }, title: 'Add two()', body: 'x', requested_by: 'test' },
  { id: 'job-1', now: new Date(0) },
);
const ws = {
  existingRemoteSha: undefined,
  pushSource: async () => ({ gitDir: '/tmp/push.git', sha: ours }),
} as unknown as Workspace;

/** A forge whose first push finds the branch at `earlier`, this task's own stale commit. */
function forgeFindingEarlier(pushes: EnsureBranchRequest[]): Forge {
  return {
    ensureBranch: async (req: EnsureBranchRequest) => {
      pushes.push(req);
      if (req.expectedSha === earlier) return { sha: ours, updated: true };
      throw new CodefleetError('git_conflict', 'holds an earlier attempt', {
        details: { remote_sha: earlier, own_task: true },
      });
    },
  } as unknown as Forge;
}

describe('pushWork', () => {
  it("replaces the task's own stale commit under a lease on it, after fencing again", async () => {
    const pushes: EnsureBranchRequest[] = [];
    const events: string[] = [];
    const pushed = await pushWork(
      { forge: forgeFindingEarlier(pushes), log: silentLogger() },
      {
        job,
        ws,
        branch: 'ai/x',
        lease: {},
        task: 'c'.repeat(20),
        signal: new AbortController().signal,
        fence: async () => {
          events.push(`fence after ${pushes.length} push(es)`);
        },
      },
    );
    expect(pushed).toEqual({ sha: ours, updated: true });
    expect(events).toEqual(['fence after 1 push(es)']);
    expect(pushes.map((req) => [req.expectedSha, req.sha, req.task])).toEqual([
      [undefined, ours, 'c'.repeat(20)],
      [earlier, ours, 'c'.repeat(20)],
    ]);
  });

  it('a delivery that lost its task lease meanwhile replaces nothing', async () => {
    const pushes: EnsureBranchRequest[] = [];
    await expect(
      pushWork(
        { forge: forgeFindingEarlier(pushes), log: silentLogger() },
        {
          job,
          ws,
          branch: 'ai/x',
          lease: {},
          task: 'c'.repeat(20),
          signal: new AbortController().signal,
          fence: async () => {
            throw new LeaseLostError(job.id);
          },
        },
      ),
    ).rejects.toMatchObject({ code: 'lease_lost' });
    expect(pushes).toHaveLength(1);
  });

  it('any other conflict is thrown as it is', async () => {
    const forge = {
      ensureBranch: async () => {
        throw new CodefleetError('git_conflict', 'somebody else', { details: { remote_sha: earlier } });
      },
    } as unknown as Forge;
    await expect(
      pushWork(
        { forge, log: silentLogger() },
        {
          job,
          ws,
          branch: 'ai/x',
          lease: {},
          task: 'c'.repeat(20),
          signal: new AbortController().signal,
          fence: async () => {},
        },
      ),
    ).rejects.toMatchObject({ code: 'git_conflict', message: 'somebody else' });
  });
});
