import { followedPullRequest, type Job } from '@codefleet/core';
import { fence, type CommentTarget, type IssueTracker } from '@codefleet/forge';
import { maskForPublishing, type SecretSource } from '@codefleet/log';
import type { Report, Requester } from '@codefleet/requester';
import { failureComment, successComment } from './issue-comments.js';

/** The progress labels of an issue (GitHub: `codefleet:running`, ...). */
export interface ProgressLabels {
  queued: string;
  running: string;
  prOpened: string;
  failed: string;
}

/** What the issue requester writes through: the issues' comments and labels. */
export type IssueThreads = Pick<IssueTracker, 'ensureComment' | 'ensureLabels'>;

/** Options of {@link createIssueRequester}. */
export interface IssueRequesterOptions {
  issues: IssueThreads;
  /** Progress labels on the issue; absent, no labels are touched. */
  labels?: ProgressLabels;
  /**
   * Also report CLI and API jobs without a callback, as comments on the forge's `task`
   * target (only the local forge holds those; `codefleet show` reads them there).
   */
  tasks?: boolean;
  secrets?: SecretSource;
}

/**
 * Reports on the issue that asked (GitHub or the local forge): one status comment, edited
 * in place (the `status` marker), and one progress label at a time. `progress` is not
 * written: a comment edit per stage would spend the API's rate limit on noise.
 */
export function createIssueRequester(options: IssueRequesterOptions): Requester {
  return {
    kind: 'issue',
    handles: (job) => targetOf(job, options.tasks) !== undefined,
    report: (report) => reportOnIssue(options, report),
  };
}

/** Where a job's reports go: its issue, the pull request it follows up, or (with `tasks`) the forge's task. */
function targetOf(job: Job, tasks: boolean | undefined): CommentTarget | undefined {
  if (job.source.kind === 'issue') return { kind: 'issue', number: job.source.number };
  // A CI follow-up of a pull request no issue owns (a chat's) reports on the pull request:
  // GitHub's issues and pull requests share one number space and one comments API.
  const pull = followedPullRequest(job);
  if (pull !== undefined) return { kind: 'issue', number: pull };
  if (
    tasks === true &&
    (job.source.kind === 'cli' || (job.source.kind === 'api' && job.source.callback_url === undefined))
  ) {
    return { kind: 'task', key: job.idempotency_key };
  }
  return undefined;
}

async function reportOnIssue(options: IssueRequesterOptions, report: Report): Promise<void> {
  const { job } = report;
  const target = targetOf(job, options.tasks);
  if (target === undefined) return;
  switch (report.kind) {
    case 'queued':
      return label(options, job, 'queued');
    case 'started':
      return label(options, job, 'running');
    case 'progress':
      return;
    case 'finished':
      return statusAndLabel(options, job, target, successComment(report.run, report.pullRequest), 'prOpened');
    case 'answered':
      return statusAndLabel(
        options,
        job,
        target,
        [
          `💬 codefleet's answer (${report.job.route?.name ?? 'read-only'}; nothing was changed or published):`,
          '',
          fence(report.answer, 'text'),
          '',
          'Status: answered',
        ].join('\n'),
        'none',
      );
    case 'failed':
      return statusAndLabel(options, job, target, failureComment(report.run, report.error, report.reason), 'failed');
    case 'cancelled':
      return statusAndLabel(
        options,
        job,
        target,
        `🛑 codefleet stopped this task: @${report.by} asked to cancel it. Nothing was published.\n\nStatus: cancelled`,
        'none',
      );
  }
}

/** Leaves `state`'s progress label on the issue and removes the others; only issues carry them. */
async function label(options: IssueRequesterOptions, job: Job, state: keyof ProgressLabels | 'none'): Promise<void> {
  const { labels } = options;
  if (labels === undefined || job.source.kind !== 'issue') return;
  const all = [labels.queued, labels.running, labels.prOpened, labels.failed];
  const add = state === 'none' ? [] : [labels[state]];
  await options.issues.ensureLabels({
    repo: job.repo,
    target: { kind: 'issue', number: job.source.number },
    add,
    remove: all.filter((l) => !add.includes(l)),
  });
}

// The comment and the label are two facts: a comment GitHub refuses (a locked issue
// answers 403) must not leave the issue labelled running. Its failure is thrown after.
async function statusAndLabel(
  options: IssueRequesterOptions,
  job: Job,
  target: CommentTarget,
  body: string,
  state: keyof ProgressLabels | 'none',
): Promise<void> {
  const status = options.issues.ensureComment({
    repo: job.repo,
    target,
    marker: 'status',
    body: maskForPublishing(body, options.secrets),
  });
  const refused = await status.then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  await label(options, job, state);
  if (refused !== undefined) throw refused.error;
}
