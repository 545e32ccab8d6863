import { CodefleetError, finish, isMemoryFile, setMemoryUpdates, setPublication, type Job } from '@codefleet/core';
import { ownStaleTip, pushedMarker, pushedShaOf, taskTrailerKey, taskTrailerValue } from '@codefleet/forge';
import type { Workspace } from '@codefleet/workspace';
import type { PipelineDeps } from './deps.js';
import { checkStillOpen, movedMessage, publishLease, type PublishLease } from './published-branch.js';
import type { JobResult, Prepared, RunningJob } from './running-job.js';
import { refuseSecrets } from './secrets-check.js';
import { renderTaskNote } from './task-note.js';
import type { Validated } from './validate.js';

/**
 * The publishing stage: the verified tree committed (never anything out of scope, never a
 * tree other than the one verified, never a secret), pushed under the lease read now, and
 * its pull request ensured: ready when the definition of done passed, a draft when it did
 * not (or none, with verification.on_dod_failure: none). The run ends `done` and whoever
 * asked is told.
 */
export async function publishJob(running: RunningJob, prepared: Prepared, validated: Validated): Promise<JobResult> {
  const { outOfScope, dod } = validated;
  await running.enter(
    'publishing',
    outOfScope.length > 0 ? `left out of the commit (out of scope): ${outOfScope.slice(0, 20).join(', ')}` : undefined,
  );
  const { deps, ctx, tracker, now, fence } = running;
  const { job } = ctx;
  const { ws, branch } = prepared;
  const dodOk = dod.result === 'passed' || dod.result === 'skipped';
  const outcome = dodOk ? 'succeeded' : 'dod_failed';
  const { task, title, note } = await commitVerified(running, prepared, validated, outcome);
  await fence('push');
  // The world as it is now, not as it was when the job was queued: a follow-up's pull request may have ended meanwhile.
  const lease = await publishLease(deps, { job, ws, branch, task, signal: ctx.signal });
  const pushed = await pushWork(deps, { job, ws, branch, task, signal: ctx.signal, fence: () => fence('push'), lease });
  if (!dodOk && deps.settings.onDodFailure === 'none') {
    throw new CodefleetError(
      'dod_failed',
      `definition of done ${dod.result}; no pull request opened (verification.on_dod_failure: none)`,
    );
  }
  if (lease.continues !== undefined) await checkStillOpen(deps, job, lease.continues, branch, ctx.signal);
  await fence('pull_request');
  const pr = await deps.forge.ensurePullRequest({
    repo: job.repo,
    head: branch,
    base: ws.baseBranch,
    title,
    // Ends with the commit pushed: CI feedback tells codefleet's head from one a human moved since.
    body: `${note}\n\n${pushedMarker(pushed.sha)}`,
    draft: !dodOk,
  });
  const pullRequest = { number: pr.number, url: pr.url, head: branch, base: ws.baseBranch, draft: pr.draft };
  await tracker.update((r) => setPublication(r, { branch, pullRequest }, { now: now() }));
  await tracker.update((r) => finish(r, outcome, { now: now(), dodResult: dod.result }));
  await running.tell({
    kind: 'finished',
    job,
    run: tracker.run,
    pullRequest: { number: pr.number, url: pr.url, draft: pr.draft },
  });
  ctx.onProgress?.({ stage: 'done' });
  return { action: 'ack', run: tracker.run };
}

/**
 * Commits the tree verification passed on and resolves what the pull request carries: the
 * task's trailer value, the title (the record's, secrets masked) and the body (the note as it
 * will read once the pull request is open, not "in progress (publishing)").
 */
async function commitVerified(
  running: RunningJob,
  prepared: Prepared,
  validated: Validated,
  outcome: 'succeeded' | 'dod_failed',
): Promise<{ task: string; title: string; note: string }> {
  const { deps, ctx, tracker, now } = running;
  const { ws, branch } = prepared;
  const { outOfScope, dod } = validated;
  // Read once: nothing runs between here and the commit that could change the tree.
  const changed = await verifiedChanges(ws, validated);
  // A memory bank update is proposed, never silent: its own section of the PR body.
  const memoryUpdates = changed.filter((file) => isMemoryFile(file) && !outOfScope.includes(file));
  if (memoryUpdates.length > 0) await tracker.update((r) => setMemoryUpdates(r, memoryUpdates, { now: now() }));
  // The record's job has its secrets masked (RunTracker): the commit and the PR carry that title.
  const shown = tracker.run.job;
  // From the key as queued, not as shown: its hash reveals nothing, and every delivery of
  // the task must name it alike whatever masking sees in it.
  const task = taskTrailerValue(ctx.job.idempotency_key);
  const message = commitMessage(shown, deps.settings.commitPrefix, task);
  await ws.commit(message, deps.settings.commitAuthor);
  const note = renderTaskNote(finish(tracker.run, outcome, { now: now(), dodResult: dod.result }));
  await refuseSecrets(ws, deps.settings.secrets, {
    'the commit message': message,
    'the branch name': branch,
    'the pull request title': shown.title,
    'the pull request body': note,
  });
  return { task, title: shown.title, note };
}

/**
 * The files the change holds, once it is sure they are what verification passed on.
 * @throws {CodefleetError} `no_changes` when the change holds nothing in scope; `dod_failed`
 * when the tree differs from the verified one (only the DoD's own commands ran since).
 */
export async function verifiedChanges(ws: Workspace, validated: Validated): Promise<string[]> {
  const changed = await ws.changedFiles();
  if (changed.filter((file) => !validated.outOfScope.includes(file)).length === 0) {
    throw new CodefleetError('no_changes', 'the agent finished without changing any file', { verdict: 'permanent' });
  }
  if ((await ws.fingerprint()) !== validated.verified) {
    throw new CodefleetError(
      'dod_failed',
      'the definition of done changed files after verification passed; what would be pushed is not what was verified. DoD commands must only check',
      { verdict: 'permanent' },
    );
  }
  return changed;
}

/**
 * The commit message: the task title, with the optional prefix and the issue link, and last
 * the trailer naming the task (`task`: its `taskTrailerValue`, never the attempt), by which a
 * redelivery knows an earlier attempt's push as its own (see {@link pushWork}).
 */
function commitMessage(job: Job, prefix: string | undefined, task: string): string {
  const subject = `${prefix ? `${prefix} ` : ''}${job.title}`.replace(/\s+/g, ' ').slice(0, 200);
  const message = job.source.kind === 'issue' ? `${subject}\n\nFixes #${job.source.number}` : subject;
  return `${message}\n\n${taskTrailerKey}: ${task}`;
}

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
