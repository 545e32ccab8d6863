import { CodefleetError, previewValue } from '@codefleet/core';
import { githubClient, splitRepo, type GithubApiOptions, type GithubClient } from './client.js';
import { GithubIssues } from './github-issues.js';
import type { ApiPull } from './pull-requests.js';

/** A closed pull request as a reader of a repository's history sees it. */
export interface ClosedPull {
  number: number;
  title: string;
  body: string;
  updatedAt: string;
  /** When it was merged; absent for one closed without merging. */
  mergedAt?: string;
  /** The commit merging it made on its base branch: a merge, squash or the last rebased commit. */
  mergeCommitSha?: string;
}

/** One page of closed pull requests, and where the next one is (GitHub's `Link: <…>; rel="next"`). */
export interface ClosedPullPage {
  pulls: ClosedPull[];
  next?: string;
}

const nextLink = /<([^<>]+)>;\s*rel="next"/;

/**
 * What codefleet reads of a repository's past on GitHub: its closed pull requests, most
 * recently updated first, a page at a time, and (on the same client) the issues they name.
 * Read only. One page per call, so a caller that retries a failed page (eval mining) asks
 * for that page again rather than starting over; the client itself never retries (outbound.ts).
 */
export class GithubPullHistory {
  /** The issues, on the same client: a pull request's linked issue. */
  readonly issues: GithubIssues;
  readonly #client: GithubClient;
  readonly #origin: string;

  constructor(client: GithubClient, apiUrl = 'https://api.github.com') {
    this.#client = client;
    this.issues = new GithubIssues(client);
    this.#origin = new URL(apiUrl).origin;
  }

  /** The first page of `repo`'s closed pull requests (100, newest update first), or the page `next` names. */
  async closedPulls(repo: string, next?: string): Promise<ClosedPullPage> {
    const { owner, repo: name } = splitRepo(repo);
    // The token goes with every request: a page link naming another host is not followed.
    if (next !== undefined && new URL(next).origin !== this.#origin)
      throw new CodefleetError('forge_rejected', `GitHub named a next page on another host: ${previewValue(next)}`);
    const octokit = this.#client.octokit;
    const { data, headers } = await this.#client.call('list closed pull requests', () =>
      next === undefined
        ? octokit.rest.pulls.list({
            owner,
            repo: name,
            state: 'closed',
            sort: 'updated',
            direction: 'desc',
            per_page: 100,
          })
        : octokit.request({ method: 'GET', url: next }),
    );
    const link = nextLink.exec(headers.link ?? '')?.[1];
    return {
      pulls: (data as (ApiPull & { merge_commit_sha?: string | null })[]).map((p) => ({
        number: p.number,
        title: p.title,
        body: p.body ?? '',
        updatedAt: p.updated_at,
        ...(p.merged_at ? { mergedAt: p.merged_at } : {}),
        ...(p.merge_commit_sha ? { mergeCommitSha: p.merge_commit_sha } : {}),
      })),
      ...(link === undefined ? {} : { next: link }),
    };
  }
}

/** Creates {@link GithubPullHistory} with a client of its own (timeouts and token handling as every GitHub call). */
export function createGithubPullHistory(options: GithubApiOptions): GithubPullHistory {
  return new GithubPullHistory(githubClient(options), options.apiUrl);
}
