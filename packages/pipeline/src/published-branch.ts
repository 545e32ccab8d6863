import { CodefleetError, type Job } from '@codefleet/core';
import { judgeTip, pushedShaOf, type PullRequest } from '@codefleet/forge';
import type { Workspace } from '@codefleet/workspace';
import type { PipelineDeps } from './deps.js';

/** How long the last look at the pull request's state may take. */
const stateTimeoutMs = 30_000;

/** What a push onto the job's branch may replace, decided from the world as it is now. */
export interface PublishLease {
  /** The sha the remote branch must still hold for the push; undefined: it must not exist. */
  expectedSha?: string;
  /** Codefleet's open pull request this job continues, when it continues one. */
  continues?: PullRequest;
}

/** Inputs of {@link publishLease}. */
export interface LeaseInput {
  job: Job;
  ws: Workspace;
  branch: string;
  /** The task's trailer value: commits carrying it are codefleet's own earlier attempts. */
  task: string;
  signal: AbortSignal;
}

/**
 * The lease for publishing on `branch`, read again at publish time: a follow-up (a CI
 * round, a review) is queued while its pull request is open and the branch is codefleet's,
 * but a human may merge, close or push in the minutes before a worker gets to it.
 *
 * 1. No pull request of codefleet's for the branch (none, or one whose body does not name
 *    the commit codefleet pushed): the branch as the workspace found it, as for any job.
 * 2. Codefleet's pull request ended (merged or closed) after this job was queued: refused,
 *    so nothing is pushed and no second pull request opens beside it. One that ended
 *    before (the issue was triggered again since) is case 1.
 * 3. Open, and the workspace found the branch at the commit codefleet pushed last (or past
 *    it only by earlier attempts of this very task, whose push landed before their pull
 *    request was updated): that commit is the lease, so the push itself refuses a branch
 *    someone moved since (`--force-with-lease`).
 * 4. Open, and anything else is on the branch: someone else pushed; refused.
 *
 * A refusal is a permanent `git_conflict` whose message says why, which the failure report
 * carries to where the job came from.
 */
export async function publishLease(
  deps: Pick<PipelineDeps, 'forge' | 'settings'>,
  input: LeaseInput,
): Promise<PublishLease> {
  const { job, ws, branch } = input;
  const found = ws.existingRemoteSha === undefined ? {} : { expectedSha: ws.existingRemoteSha };
  const pull = await deps.forge.findPullRequest(job.repo, branch);
  const pushed = pull === undefined ? undefined : pushedShaOf(pull.body);
  if (pull === undefined || pushed === undefined) return found;
  if (pull.state !== 'open') {
    const endedAt = Date.parse(pull.closedAt ?? pull.updatedAt);
    if (Date.parse(job.created_at) > endedAt) return found;
    throw refusal(
      `pull request #${pull.number} was ${pull.state} after this job was queued: codefleet does not push to \`${branch}\` again nor open another pull request beside it`,
      pull,
    );
  }
  const head = ws.existingRemoteSha;
  if (head !== undefined && (head === pushed || (await ownAttempts(deps, input, pushed, head))))
    return { expectedSha: head, continues: pull };
  throw refusal(
    head === undefined
      ? `\`${branch}\` of pull request #${pull.number} is gone: codefleet does not push it again`
      : movedMessage(branch, pushed, head),
    pull,
  );
}

/** Why a branch someone else pushed to is left alone; `head` where it is now, when known. */
export function movedMessage(branch: string, pushed: string, head?: string): string {
  const where = head === undefined ? '' : ` (it is at ${head.slice(0, 7)})`;
  return `\`${branch}\` has moved since codefleet pushed ${pushed.slice(0, 7)}${where}: someone else pushed to it, so codefleet leaves it to them`;
}

/**
 * Whether the pull request `pull` is still open now: the last look before a pull request is
 * written, so a merge during the push does not make codefleet open a second one.
 */
export async function checkStillOpen(
  deps: Pick<PipelineDeps, 'forge'>,
  job: Job,
  pull: PullRequest,
  branch: string,
  signal: AbortSignal,
): Promise<void> {
  const state = await deps.forge
    .pullRequestState(job.repo, pull.number, AbortSignal.any([signal, AbortSignal.timeout(stateTimeoutMs)]))
    .catch((error: unknown) => {
      if (signal.aborted || (error as { code?: unknown }).code !== 'cancelled') throw error;
      // Our own bound, not a cancel: the forge is slow, which a later attempt may not find.
      throw new CodefleetError(
        'forge_unavailable',
        `the forge did not say within ${stateTimeoutMs / 1_000} s whether pull request #${pull.number} is still open`,
        { verdict: 'transient', cause: error },
      );
    });
  if (state !== 'open') {
    throw refusal(
      `pull request #${pull.number} was ${state} while this job pushed to \`${branch}\`: codefleet does not open another pull request beside it`,
      pull,
    );
  }
}

/** Every commit `head` has beyond `pushed` is an earlier attempt of this task (its trailer). */
async function ownAttempts(
  deps: Pick<PipelineDeps, 'settings'>,
  input: LeaseInput,
  pushed: string,
  head: string,
): Promise<boolean> {
  const { gitDir } = await input.ws.pushSource();
  // No global config: an agent shares the worker's HOME and could have written one.
  const env = { ...deps.settings.verifyEnv, GIT_CONFIG_GLOBAL: '/dev/null' };
  const git = {
    env,
    timeoutMs: 60_000,
    ...(deps.settings.gitPath === undefined ? {} : { gitPath: deps.settings.gitPath }),
  };
  // A commit it cannot read (history rewritten by someone) is not codefleet's either.
  const verdict = await judgeTip(git, gitDir, { ours: pushed, tip: head, task: input.task }, input.signal).catch(
    () => 'foreign' as const,
  );
  return verdict === 'own_task';
}

function refusal(message: string, pull: PullRequest): CodefleetError {
  return new CodefleetError('git_conflict', message, {
    verdict: 'permanent',
    details: { pull_request: pull.number, refused: true },
  });
}
