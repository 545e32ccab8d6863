import { fence, followedPullRequest, type Job } from '@codefleet/core';
import type { CommentTarget, IssueTracker } from '@codefleet/forge';
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
  const { issues, labels } = options;
  const mask = (text: string) => maskForPublishing(text, options.secrets);
  const targetOf = (job: Job): CommentTarget | undefined => {
    if (job.source.kind === 'issue') return { kind: 'issue', number: job.source.number };
    // A CI follow-up of a pull request no issue owns (a chat's) reports on the pull request:
    // GitHub's issues and pull requests share one number space and one comments API.
    const pull = followedPullRequest(job);
    if (pull !== undefined) return { kind: 'issue', number: pull };
    if (
      options.tasks === true &&
      (job.source.kind === 'cli' || (job.source.kind === 'api' && job.source.callback_url === undefined))
    ) {
      return { kind: 'task', key: job.idempotency_key };
    }
    return undefined;
  };
  const status = (job: Job, target: CommentTarget, body: string) =>
    issues.ensureComment({ repo: job.repo, target, marker: 'status', body: mask(body) });
  const label = async (job: Job, state: keyof ProgressLabels | 'none') => {
    if (labels === undefined || job.source.kind !== 'issue') return;
    const all = [labels.queued, labels.running, labels.prOpened, labels.failed];
    const add = state === 'none' ? [] : [labels[state]];
    await issues.ensureLabels({
      repo: job.repo,
      target: { kind: 'issue', number: job.source.number },
      add,
      remove: all.filter((l) => !add.includes(l)),
    });
  };
  // The comment and the label are two facts: a comment GitHub refuses (a locked issue
  // answers 403) must not leave the issue labelled running. Its failure is thrown after.
  const statusAndLabel = async (
    job: Job,
    target: CommentTarget,
    body: string,
    state: keyof ProgressLabels | 'none',
  ) => {
    const refused = await status(job, target, body).then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    await label(job, state);
    if (refused !== undefined) throw refused.error;
  };
  return {
    kind: 'issue',
    handles: (job) => targetOf(job) !== undefined,
    async report(report: Report): Promise<void> {
      const { job } = report;
      const target = targetOf(job);
      if (target === undefined) return;
      switch (report.kind) {
        case 'queued':
          return label(job, 'queued');
        case 'started':
          return label(job, 'running');
        case 'progress':
          return;
        case 'finished':
          return statusAndLabel(job, target, successComment(report.run, report.pullRequest), 'prOpened');
        case 'answered':
          return statusAndLabel(
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
          return statusAndLabel(job, target, failureComment(report.run, report.error, report.reason), 'failed');
        case 'cancelled':
          return statusAndLabel(
            job,
            target,
            `🛑 codefleet stopped this task: @${report.by} asked to cancel it. Nothing was published.\n\nStatus: cancelled`,
            'none',
          );
      }
    },
  };
}
