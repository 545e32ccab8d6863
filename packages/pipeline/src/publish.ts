import { CodefleetError, type Job } from '@codefleet/core';
import { ownStaleTip, pushedShaOf } from '@codefleet/forge';
import type { Workspace } from '@codefleet/workspace';
import type { PipelineDeps } from './deps.js';
import { movedMessage, type PublishLease } from './published-branch.js';

/** Input of {@link pushWork}. */
export interface PushWork {
  job: Job;
  ws: Workspace;
  branch: string;
  /** The task's trailer value, as the commit carries it (`taskTrailerValue` of the idempotency key). */
  task: string;
  signal: AbortSignal;
  /** Asks the shared store whether this delivery still owns the task; throws when not. */
  fence: () => Promise<void>;
  /** What the push may replace, read at publish time ({@link publishLease}). */
  lease: PublishLease;
}

/**
 * Pushes the committed, verified work to the job's branch under the lease read at publish
 * time ({@link PublishLease}), and resolves to what the branch holds now (the sha a pull request
 * must name).
 *
 * Jobs are delivered at least once: a worker killed while its push was in flight leaves a
 * push that may land after it died, before or during the redelivery's own push. The forge
 * converges when the branch then holds this commit or one with exactly its tree (that
 * earlier attempt's content is what this attempt verified). When it holds an earlier
 * attempt's commit of this task with other content (the agent did not write the same thing
 * twice), this attempt's commit replaces it, under a lease on that very commit and after
 * fencing again:
 * - what is published is exactly what was verified, and by the attempt whose record the
 *   pull request's body describes; publishing the earlier commit instead would show one
 *   attempt's checks above another's code (maybe a DoD-failed draft's);
 * - only the lease holder replaces: a worker paused past its lease, whose own push lost to
 *   this one, is fenced off here instead of replacing the newer commit in turn;
 * - nothing but that task's own commits is dropped (the forge checks every commit the tip
 *   has beyond ours), and a commit of anybody else stays a `git_conflict`.
 */
export async function pushWork(
  deps: Pick<PipelineDeps, 'forge' | 'log'>,
  work: PushWork,
): Promise<{ sha: string; updated: boolean }> {
  const { job, ws, branch, task, signal } = work;
  const source = await ws.pushSource();
  const request = { repo: job.repo, workdir: source.gitDir, sha: source.sha, branch, signal, task };
  const facts = { job_id: job.id, branch, sha: source.sha };
  try {
    const lease = work.lease.expectedSha === undefined ? {} : { expectedSha: work.lease.expectedSha };
    const pushed = await deps.forge.ensureBranch({ ...request, ...lease });
    if (pushed.sha !== source.sha) {
      // The PR's pushed marker names the branch's commit, so CI feedback knows it as codefleet's.
      deps.log.info(
        { event: 'publish.converged', ...facts, remote_sha: pushed.sha },
        'the branch already held this work (the same tree), pushed by an earlier attempt',
      );
    }
    return pushed;
  } catch (error) {
    const stale = ownStaleTip(error);
    if (stale === undefined) throw movedDuringJob(error, work);
    deps.log.info(
      { event: 'publish.replacing_own_commit', ...facts, remote_sha: stale },
      "the branch holds an earlier attempt's commit of this task: replacing it",
    );
    await work.fence();
    return deps.forge.ensureBranch({ ...request, expectedSha: stale });
  }
}

/** A continued pull request's branch someone pushed to while the job ran: said as such. */
function movedDuringJob(error: unknown, work: PushWork): unknown {
  const { continues } = work.lease;
  const remote = (error as { details?: { remote_sha?: unknown } }).details?.remote_sha;
  const pushed = continues === undefined ? undefined : pushedShaOf(continues.body);
  if ((error as { code?: unknown }).code !== 'git_conflict' || continues === undefined || pushed === undefined)
    return error;
  return new CodefleetError(
    'git_conflict',
    movedMessage(work.branch, pushed, typeof remote === 'string' ? remote : undefined),
    {
      verdict: 'permanent',
      cause: error,
      details: { pull_request: continues.number, refused: true },
    },
  );
}
