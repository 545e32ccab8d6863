import {
  checkBody,
  checkLabel,
  parseMarker,
  renderMarked,
  type Comment,
  type CommentTarget,
  type EnsureCommentRequest,
  type EnsureLabelsRequest,
  type IssueTracker,
} from '@codefleet/forge';
import { githubClient, issueNumber, splitRepo, type GithubApiOptions, type GithubClient } from './client.js';
import { githubFailure } from './errors.js';

/** An issue as codefleet snapshots it at enqueue time; later edits cannot change a queued job. */
export interface GithubTask {
  number: number;
  title: string;
  body: string;
  labels: string[];
  author: string;
  state: 'open' | 'closed';
  isPullRequest: boolean;
}

/** Repository roles as GitHub reports them; `write` and above may trigger jobs. */
export type GithubPermission = 'admin' | 'maintain' | 'write' | 'triage' | 'read' | 'none';

/**
 * GitHub's issues: what a producer reads (the issue a job snapshots, label events, comments,
 * review comments, a login's permission) and where the issue requester reports (one marked
 * comment per role, progress labels). Pull requests share the issues' numbers, comments and
 * labels. Branches and pull requests themselves are {@link GithubForge}'s.
 */
export class GithubIssues implements IssueTracker {
  readonly kind = 'github' as const;
  readonly #client: GithubClient;

  constructor(client: GithubClient) {
    this.#client = client;
  }

  /** The issue (or pull request) `number`: what a job snapshots when it is enqueued. */
  async getTask(repo: string, number: number): Promise<GithubTask> {
    const { owner, repo: name } = splitRepo(repo);
    const { data } = await this.#client.call(`get issue #${number}`, () =>
      this.#client.octokit.rest.issues.get({ owner, repo: name, issue_number: number }),
    );
    return {
      number: data.number,
      title: data.title,
      body: data.body ?? '',
      labels: data.labels.map((l) => (typeof l === 'string' ? l : (l.name ?? ''))).filter((l) => l !== ''),
      author: data.user?.login ?? '',
      state: data.state === 'closed' ? 'closed' : 'open',
      isPullRequest: data.pull_request !== undefined && data.pull_request !== null,
    };
  }

  /** Open issues (not pull requests) carrying `label`: what polling mode looks at. */
  async labeledIssues(repo: string, label: string): Promise<number[]> {
    const { owner, repo: name } = splitRepo(repo);
    const data = await this.#client.call('list labeled issues', () =>
      this.#client.octokit.paginate(this.#client.octokit.rest.issues.listForRepo, {
        owner,
        repo: name,
        labels: label,
        state: 'open',
        per_page: 100,
      }),
    );
    return data.filter((issue) => !issue.pull_request).map((issue) => issue.number);
  }

  /** Who added `label` to issue `number`, one entry per `labeled` event, oldest first. */
  async labelEvents(repo: string, number: number, label: string): Promise<{ id: number; actor: string }[]> {
    const { owner, repo: name } = splitRepo(repo);
    const events = await this.#client.call('list issue events', () =>
      this.#client.octokit.paginate(this.#client.octokit.rest.issues.listEvents, {
        owner,
        repo: name,
        issue_number: number,
        per_page: 100,
      }),
    );
    return events
      .filter(
        (e) =>
          e.event === 'labeled' &&
          (e as { label?: { name?: string } }).label?.name?.toLowerCase() === label.toLowerCase(),
      )
      .map((e) => ({ id: e.id, actor: e.actor?.login ?? '' }));
  }

  /** Issue and pull request comments updated since `since` (ISO), oldest first. */
  async commentsSince(
    repo: string,
    since: string | undefined,
  ): Promise<{ id: number; issueNumber: number; body: string; author: string; updatedAt: string }[]> {
    const { owner, repo: name } = splitRepo(repo);
    const data = await this.#client.call('list issue comments', () =>
      this.#client.octokit.paginate(this.#client.octokit.rest.issues.listCommentsForRepo, {
        owner,
        repo: name,
        sort: 'updated',
        direction: 'asc',
        per_page: 100,
        ...(since === undefined ? {} : { since }),
      }),
    );
    return data.map((c) => ({
      id: c.id,
      issueNumber: Number(/\/issues\/(\d+)$/.exec(c.issue_url)?.[1]),
      body: c.body ?? '',
      author: c.user?.login ?? '',
      updatedAt: c.updated_at,
    }));
  }

  /** The inline comments of one review, in order: where the reviewer asked for what. */
  async reviewComments(
    repo: string,
    pullNumber: number,
    reviewId: number,
  ): Promise<{ path: string; line?: number; body: string; author: string }[]> {
    const { owner, repo: name } = splitRepo(repo);
    const data = await this.#client.call('list review comments', () =>
      this.#client.octokit.paginate(this.#client.octokit.rest.pulls.listCommentsForReview, {
        owner,
        repo: name,
        pull_number: pullNumber,
        review_id: reviewId,
        per_page: 100,
      }),
    );
    return data.map((c) => ({
      path: c.path,
      ...(typeof c.line === 'number' ? { line: c.line } : {}),
      body: c.body,
      author: c.user?.login ?? '',
    }));
  }

  /**
   * `login`'s role on `repo`, from the API: the only basis for "may trigger" (never a
   * `[bot]` suffix or an author-association string). Someone without access is `none`.
   */
  async permission(repo: string, login: string): Promise<GithubPermission> {
    const { owner, repo: name } = splitRepo(repo);
    try {
      const { data } = await this.#client.octokit.rest.repos.getCollaboratorPermissionLevel({
        owner,
        repo: name,
        username: login,
      });
      // The role when it is a built-in one; a custom role counts by its base permission.
      const known = (value: unknown) =>
        (['admin', 'maintain', 'write', 'triage', 'read'] as const).find((r) => r === value);
      return known((data as { role_name?: string }).role_name) ?? known(data.permission) ?? 'none';
    } catch (error) {
      // GitHub answers 404 for a user who is not a collaborator at all.
      if ((error as { status?: number }).status === 404) return 'none';
      throw githubFailure('get collaborator permission', error);
    }
  }

  async ensureComment(req: EnsureCommentRequest): Promise<{ id: number; created: boolean }> {
    const { owner, repo } = splitRepo(req.repo);
    const number = issueNumber(req.target);
    const body = renderMarked(req.marker, req.body);
    checkBody(body);
    const mine = (await this.#comments(owner, repo, number)).find((c) => c.marker === req.marker);
    if (mine) {
      if (mine.body !== body)
        await this.#client.call('update comment', () =>
          this.#client.octokit.rest.issues.updateComment({ owner, repo, comment_id: mine.id, body }),
        );
      return { id: mine.id, created: false };
    }
    const { data } = await this.#client.call('create comment', () =>
      this.#client.octokit.rest.issues.createComment({ owner, repo, issue_number: number, body }),
    );
    return { id: data.id, created: true };
  }

  async listComments(repo: string, target: CommentTarget): Promise<Comment[]> {
    const { owner, repo: name } = splitRepo(repo);
    return this.#comments(owner, name, issueNumber(target));
  }

  async ensureLabels(req: EnsureLabelsRequest): Promise<{ labels: string[] }> {
    const { owner, repo } = splitRepo(req.repo);
    const number = issueNumber(req.target);
    const add = (req.add ?? []).map(checkLabel);
    const remove = (req.remove ?? []).map(checkLabel);
    const current = await this.listLabels(req.repo, req.target);
    const has = (name: string) => current.some((l) => l.toLowerCase() === name.toLowerCase());
    const missing = add.filter((name) => !has(name));
    // GitHub answers both writes with the issue's whole label set: no listing afterwards.
    let labels = current;
    const names = (data: { name: string }[]) => data.map((l) => l.name);
    if (missing.length > 0) {
      labels = names(
        (
          await this.#client.call('add labels', () =>
            this.#client.octokit.rest.issues.addLabels({ owner, repo, issue_number: number, labels: missing }),
          )
        ).data,
      );
    }
    for (const name of remove.filter((n) => has(n) && !add.some((a) => a.toLowerCase() === n.toLowerCase()))) {
      try {
        labels = names(
          (await this.#client.octokit.rest.issues.removeLabel({ owner, repo, issue_number: number, name })).data,
        );
      } catch (error) {
        // Removed by someone else meanwhile: the goal is reached.
        if ((error as { status?: number }).status !== 404) throw githubFailure('remove label', error);
        labels = labels.filter((l) => l.toLowerCase() !== name.toLowerCase());
      }
    }
    return { labels: [...labels].sort((a, b) => a.localeCompare(b)) };
  }

  async listLabels(repo: string, target: CommentTarget): Promise<string[]> {
    const { owner, repo: name } = splitRepo(repo);
    const { data } = await this.#client.call('list labels', () =>
      this.#client.octokit.rest.issues.listLabelsOnIssue({
        owner,
        repo: name,
        issue_number: issueNumber(target),
        per_page: 100,
      }),
    );
    return data.map((l) => l.name).sort((a, b) => a.localeCompare(b));
  }

  async #comments(owner: string, repo: string, number: number): Promise<Comment[]> {
    const data = await this.#client.call('list comments', () =>
      this.#client.octokit.paginate(this.#client.octokit.rest.issues.listComments, {
        owner,
        repo,
        issue_number: number,
        per_page: 100,
      }),
    );
    return data.map((c) => {
      const body = c.body ?? '';
      const marker = parseMarker(body);
      return {
        id: c.id,
        body,
        ...(marker === undefined ? {} : { marker }),
        createdAt: c.created_at,
        updatedAt: c.updated_at,
      };
    });
  }
}

/** Creates {@link GithubIssues} with a client of its own (a producer that needs no forge). */
export function createGithubIssues(options: GithubApiOptions): GithubIssues {
  return new GithubIssues(githubClient(options));
}
