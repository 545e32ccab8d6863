import { createHash, randomUUID } from 'node:crypto';
import { createJob, maxBodyChars, type Job } from '@codefleet/core';
import { pushedShaOf } from '@codefleet/forge';
import type { CiPull, CommitChecks } from '../api/github-checks.js';
import { checkNames, ciFeedbackSection } from './ci-task.js';
import {
  alreadyRan,
  bestEffort,
  defaultCiSettleMs,
  type CiFeedbackSettings,
  type TriggerDeps,
  type TriggerOutcome,
} from './trigger.js';

/** Checks that finished on a commit of a codefleet branch, from a webhook or a poll. */
export interface CiRequest {
  /** `owner/name`. */
  repo: string;
  /** The commit the checks ran on. */
  sha: string;
  /** Its branch (`ai/…`). */
  branch: string;
  /** Pull requests the event named (empty: the open one of `branch` is looked up). */
  pullNumbers: readonly number[];
  /** `failed`: a check failed; `passed`: a suite (or status) passed, which may end the loop. */
  outcome: 'failed' | 'passed';
  /** Where the event came from, for logs (`webhook <delivery id>`, `poll`). */
  via: string;
}

/** The markers of the comments CI feedback writes on a pull request: one per round, refusal or end. */
export const ciMarkers = {
  round: (sha: string) => `ci-round:${sha}`,
  refused: (sha: string) => `ci-refused:${sha}`,
  ended: 'ci-ended',
} as const;

/** Who a CI follow-up job is requested by, in reports. */
export const ciRequester = 'codefleet-ci';

/** The id of the follow-up job for `sha` on a pull request: one commit's failure is one job, however often it is reported. */
export function ciJobId(repo: string, pullNumber: number, sha: string): string {
  const repoKey = createHash('sha256').update(repo.toLowerCase()).digest('hex').slice(0, 8);
  return `gh-ci-${repoKey}-${pullNumber}-${sha}`;
}

/**
 * Failing checks on a pull request codefleet opened become a follow-up job on the same
 * branch whose task carries the failing jobs' logs; a green run after such rounds ends the
 * loop. Only for an open pull request of the repository's own `ai/` branch (never a fork's)
 * whose body names the commit codefleet pushed last (`pushedMarker`): anything else is not
 * codefleet's and is ignored without a word. On codefleet's pull requests every round and
 * every refusal is one comment per commit (so repeated deliveries say nothing new): a
 * head someone else pushed, the rounds used up (`maxRounds`), a loop that has ended.
 * A follow-up while the issue's job is queued or running is `deferred`, like a review.
 */
export async function followUpFromCi(deps: TriggerDeps, req: CiRequest): Promise<TriggerOutcome> {
  const settings = deps.ciFeedback;
  if (!settings?.enabled || !deps.checks) return ignored('CI feedback is off (forge.github.ci_feedback.enabled)');
  const found = await codefleetPull(deps.checks, req);
  if ('status' in found) return found;
  const round = await roundOn(deps, req, found.pull, found.pushed);
  return req.outcome === 'passed' ? endLoop(deps, req, round) : followUpFailure(deps, settings, req, round);
}

const ignored = (reason: string): TriggerOutcome => ({ status: 'ignored', reason });
const roundWord = (n: number) => `${n} round${n === 1 ? '' : 's'}`;

/** The pull request of a CI request when it is codefleet's, with the commit codefleet pushed; else why not. */
async function codefleetPull(
  checks: NonNullable<TriggerDeps['checks']>,
  req: CiRequest,
): Promise<{ pull: CiPull; pushed: string } | TriggerOutcome> {
  if (!req.branch.startsWith('ai/')) return ignored(`${req.branch} is not a codefleet branch`);
  const pull = await findPull(checks, req);
  if (!pull)
    return ignored(
      `no open pull request has ${req.branch} at ${req.sha.slice(0, 7)} (pushed again since, or not codefleet's)`,
    );
  if (pull.headRepo.toLowerCase() !== req.repo.toLowerCase())
    return ignored('pull requests from forks are never followed up');
  const pushed = pushedShaOf(pull.body);
  if (pushed === undefined)
    return ignored(`pull request #${pull.number} does not say which commit codefleet pushed: not codefleet's`);
  return { pull, pushed };
}

/** Where a CI request stands on its pull request: the comments said so far and the rounds run. */
interface Round {
  pull: CiPull;
  /** The commit codefleet pushed last. */
  pushed: string;
  /** The request's commit, short. */
  short: string;
  log: TriggerDeps['log'];
  markers: ReadonlySet<string>;
  rounds: number;
  /** Writes the comment of `marker` on the pull request (once per marker). */
  say(marker: string, body: string): Promise<unknown>;
}

async function roundOn(deps: TriggerDeps, req: CiRequest, pull: CiPull, pushed: string): Promise<Round> {
  const target = { kind: 'pull' as const, number: pull.number };
  const markers = new Set((await deps.issues.listComments(req.repo, target)).map((c) => c.marker ?? ''));
  return {
    pull,
    pushed,
    short: req.sha.slice(0, 7),
    log: deps.log.child({ repo: req.repo, pull: pull.number, sha: req.sha, via: req.via }),
    markers,
    rounds: [...markers].filter((m) => m.startsWith('ci-round:')).length,
    say: (marker, body) => deps.issues.ensureComment({ repo: req.repo, target, marker, body }),
  };
}

/** CI passed: ends the loop once every check of the commit has, after at least one round. */
async function endLoop(deps: TriggerDeps, req: CiRequest, round: Round): Promise<TriggerOutcome> {
  const { rounds, short } = round;
  if (rounds === 0) return ignored('CI passed with no CI feedback round to end');
  if (round.markers.has(ciMarkers.ended)) return ignored('the CI feedback loop of this pull request has ended already');
  // One suite passing says nothing of the others: every check of the commit must have.
  const state = await deps.checks!.commitChecks(req.repo, req.sha);
  if (state.failed.length > 0 || state.pending > 0) return ignored(`not every check of ${short} has passed yet`);
  await round.say(
    ciMarkers.ended,
    `✅ CI passes on ${short} after ${roundWord(rounds)} of CI feedback. The CI feedback loop of this pull request has ended: codefleet will not follow up CI failures here again.`,
  );
  round.log.info({ event: 'ci.loop_ended', rounds }, 'CI passes: the CI feedback loop ended');
  return { status: 'ended', reason: `CI passes on ${short} after ${roundWord(rounds)}` };
}

/** Why a failure on the request's commit is not followed up, as [reason, what the pull request is told]. */
function refusalOf(req: CiRequest, settings: CiFeedbackSettings, round: Round): [string, string] | undefined {
  const { short, rounds } = round;
  if (round.markers.has(ciMarkers.ended))
    return [
      'the CI feedback loop has ended',
      `CI fails on ${short}, but the CI feedback loop of this pull request ended when CI passed: codefleet does not follow up again. A human should look.`,
    ];
  if (round.pushed !== req.sha)
    return [
      'someone else pushed to the branch',
      `CI fails on ${short}, but \`${req.branch}\` has moved since codefleet pushed ${round.pushed.slice(0, 7)}: someone else pushed to it, so codefleet leaves the fix to them.`,
    ];
  if (rounds >= settings.maxRounds)
    return [
      `${roundWord(rounds)} of CI feedback used`,
      `CI fails on ${short} after ${roundWord(rounds)} of CI feedback, the most for one pull request (forge.github.ci_feedback.max_rounds: ${settings.maxRounds}): codefleet stops here. A human should look.`,
    ];
  return undefined;
}

/** CI failed: a round (a follow-up job) once every check had its say, unless refused. */
async function followUpFailure(
  deps: TriggerDeps,
  settings: CiFeedbackSettings,
  req: CiRequest,
  round: Round,
): Promise<TriggerOutcome> {
  const { short, log } = round;
  const jobId = ciJobId(req.repo, round.pull.number, req.sha);
  if (round.markers.has(ciMarkers.round(req.sha))) return { status: 'duplicate', jobId };
  if (round.markers.has(ciMarkers.refused(req.sha)))
    return ignored(`CI feedback for ${short} was refused already (said on the pull request)`);
  const refusal = refusalOf(req, settings, round);
  if (refusal !== undefined) {
    const [reason, body] = refusal;
    await round.say(ciMarkers.refused(req.sha), `⏹️ ${body}`);
    log.info({ event: 'ci.refused', reason }, 'CI failure not followed up');
    return { status: 'refused', reason };
  }
  const state = await deps.checks!.commitChecks(req.repo, req.sha);
  if (state.failed.length === 0) return ignored(`no check fails on ${short} any more`);
  // One round per commit: it starts once every check has had its say, so a check failing
  // later on the same commit reaches the agent too. The delivery is kept and asked again.
  const waiting = stillSettling(state, settings, (deps.now ?? (() => new Date()))());
  if (waiting !== undefined) {
    log.info({ event: 'ci.waiting', pending: state.pending }, "CI failure kept until the commit's other checks finish");
    return {
      status: 'deferred',
      jobId,
      reason: `${state.pending} check${state.pending === 1 ? '' : 's'} of ${short} still running: the round waits for them (${waiting})`,
    };
  }
  const job = await ciJob(deps, settings, req.repo, round.pull, state, jobId);
  const announce = () =>
    round.say(
      ciMarkers.round(req.sha),
      `🔁 CI failed on ${short} (${checkNames(state)}). Round ${round.rounds + 1} of ${settings.maxRounds}: codefleet queued a follow-up job on \`${req.branch}\` with the failing log.`,
    );
  return startRound(deps, job, round, announce);
}

/** Enqueues the round's job and says so on the pull request (the comment is what counts the round). */
async function startRound(
  deps: TriggerDeps,
  job: Job,
  round: Round,
  announce: () => Promise<unknown>,
): Promise<TriggerOutcome> {
  const { log } = round;
  if (await alreadyRan(deps, job.id)) {
    await announce();
    return { status: 'duplicate', jobId: job.id };
  }
  const result = await deps.queue.enqueue(job);
  if (result.deduplicated && result.id !== job.id) {
    log.info({ event: 'ci.follow_up_deferred', job_id: result.id }, 'CI follow-up kept until the running job ends');
    return { status: 'deferred', jobId: result.id, reason: `job ${result.id} of this work is queued or running` };
  }
  // The round counts by its comment: written before the outcome, so a failure retries the
  // delivery (the job id makes that enqueue the same job) rather than losing the count.
  await announce();
  if (result.deduplicated) return { status: 'duplicate', jobId: job.id };
  log.info({ event: 'ci.follow_up', job_id: job.id, round: round.rounds + 1 }, 'CI follow-up queued');
  await bestEffort(log, 'trigger.label_failed', () => deps.requester.report({ kind: 'queued', job }));
  return { status: 'enqueued', jobId: job.id };
}

/**
 * Why a round should wait (what is left of the bound), or undefined when it may start: no
 * check is pending, or the first failure is older than `settleMs` (a check stuck pending
 * must not stall the loop), or GitHub gave no time to count from.
 */
function stillSettling(state: CommitChecks, settings: CiFeedbackSettings, now: Date): string | undefined {
  if (state.pending === 0 || state.firstFailedAt === undefined) return undefined;
  const settleMs = settings.settleMs ?? defaultCiSettleMs;
  const left = Date.parse(state.firstFailedAt) + settleMs - now.getTime();
  if (!(left > 0)) return undefined;
  return `at most ${Math.ceil(left / 60_000)} min more, forge.github.ci_feedback.settle_seconds`;
}

/** The open pull request whose head is the request's branch at its commit. */
async function findPull(checks: NonNullable<TriggerDeps['checks']>, req: CiRequest): Promise<CiPull | undefined> {
  const candidates =
    req.pullNumbers.length > 0
      ? await Promise.all(req.pullNumbers.map((n) => checks.pull(req.repo, n)))
      : [await checks.openPullFor(req.repo, req.branch)];
  return candidates.find(
    (p) => p !== undefined && p.state === 'open' && p.headRef === req.branch && p.headSha === req.sha,
  );
}

/**
 * The follow-up job: same branch and base as the pull request. An issue's branch keeps the
 * issue as its source (reports go there; one job of the issue at a time); another codefleet
 * branch (a chat's) continues under the pull request's title, one job of it at a time.
 */
async function ciJob(
  deps: TriggerDeps,
  settings: CiFeedbackSettings,
  repo: string,
  pull: CiPull,
  state: CommitChecks,
  jobId: string,
): Promise<Job> {
  const section = await ciFeedbackSection(deps.checks!, repo, pull, state, settings.logBytes);
  const withSection = (task: string) =>
    `${task.slice(0, Math.max(0, maxBodyChars - section.length - 2))}\n\n${section}`.slice(0, maxBodyChars);
  const common = { id: jobId, repo, branch: pull.headRef, base_branch: pull.baseRef, requested_by: ciRequester };
  const at = { id: randomUUID(), now: (deps.now ?? (() => new Date()))() };
  const issue = /^ai\/issue-(\d+)$/.exec(pull.headRef)?.[1];
  if (issue !== undefined) {
    const task = await deps.issues.getTask(repo, Number(issue));
    return createJob(
      {
        ...common,
        source: { kind: 'issue', number: Number(issue), via: 'ci' },
        title: task.title,
        body: withSection(task.body),
      },
      at,
    );
  }
  return createJob(
    {
      ...common,
      source: { kind: 'ci', pull: pull.number },
      title: pull.title.replace(/^\[Draft\] /, '').trim() || `Pull request #${pull.number}`,
      body: withSection(`Continue the work of pull request #${pull.number} on its branch.`),
    },
    at,
  );
}
