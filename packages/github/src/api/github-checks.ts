import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { CodefleetError } from '@codefleet/core';
import { splitRepo, type GithubClient } from './client.js';
import { githubSignal, noAnswerReason } from './outbound.js';

/** A pull request as CI feedback reads it: whose head, where, at which commit. */
export interface CiPull {
  number: number;
  state: 'open' | 'closed';
  title: string;
  body: string;
  headRef: string;
  headSha: string;
  /** The head repository's `owner/name`; empty when a fork was deleted. */
  headRepo: string;
  baseRef: string;
}

/** One failing check of a commit. */
export interface FailedCheck {
  /** The check run's or status's name (`context`). */
  name: string;
  /** `actions`: a GitHub Actions job (its log can be read); `app`: another App's check run; `status`: a commit status. */
  kind: 'actions' | 'app' | 'status';
  /** `failure`, `timed_out`, `error`, … */
  conclusion: string;
  /** The Actions job id (a check run of GitHub Actions has the job's id). */
  jobId?: number;
  /** What the check itself says (output title, summary and text; a status's description). */
  text: string;
  url?: string;
}

/** The checks of one commit, counted. */
export interface CommitChecks {
  failed: FailedCheck[];
  /** Check runs not completed and pending statuses: CI has not finished. */
  pending: number;
  passed: number;
  /** When the earliest failing check finished (ISO 8601), where GitHub says: how long CI has been failing. */
  firstFailedAt?: string;
}

/** Conclusions that mean the check failed (cancelled, skipped and neutral do not). */
const failing = new Set(['failure', 'timed_out', 'action_required', 'startup_failure']);
/** The most of a job log kept: its end, where the failing step is. */
export const maxJobLogBytes = 4 * 1024 * 1024;

/**
 * What codefleet reads of GitHub's checks to feed CI failures back: the pull request of a
 * head, the check runs and statuses of a commit, and an Actions job's log. Read only; the
 * comments go through `GithubIssues`.
 */
export class GithubChecks {
  readonly #client: GithubClient;

  constructor(client: GithubClient) {
    this.#client = client;
  }

  /** Pull request `number`. */
  async pull(repo: string, number: number): Promise<CiPull> {
    const { owner, repo: name } = splitRepo(repo);
    const { data } = await this.#client.call(`get pull request #${number}`, () =>
      this.#client.octokit.rest.pulls.get({ owner, repo: name, pull_number: number }),
    );
    return ciPull(data);
  }

  /** The open pull requests of `repo`, oldest first: what polling looks at. */
  async openPulls(repo: string): Promise<CiPull[]> {
    const { owner, repo: name } = splitRepo(repo);
    const data = await this.#client.call('list pull requests', () =>
      this.#client.octokit.paginate(this.#client.octokit.rest.pulls.list, {
        owner,
        repo: name,
        state: 'open',
        sort: 'created',
        direction: 'asc',
        per_page: 100,
      }),
    );
    return data.map(ciPull);
  }

  /** The open pull request whose head is `branch` of `repo` itself (never a fork's). */
  async openPullFor(repo: string, branch: string): Promise<CiPull | undefined> {
    const { owner, repo: name } = splitRepo(repo);
    const { data } = await this.#client.call('list pull requests', () =>
      this.#client.octokit.rest.pulls.list({
        owner,
        repo: name,
        head: `${owner}:${branch}`,
        state: 'open',
        per_page: 10,
      }),
    );
    const found = data[0];
    return found === undefined ? undefined : ciPull(found);
  }

  /** The latest check run of each name and the combined status of commit `sha`. */
  async commitChecks(repo: string, sha: string): Promise<CommitChecks> {
    const { owner, repo: name } = splitRepo(repo);
    const runs = await this.#client.call('list check runs', () =>
      this.#client.octokit.paginate(this.#client.octokit.rest.checks.listForRef, {
        owner,
        repo: name,
        ref: sha,
        filter: 'latest',
        per_page: 100,
      }),
    );
    const { data: combined } = await this.#client.call('get combined status', () =>
      this.#client.octokit.rest.repos.getCombinedStatusForRef({ owner, repo: name, ref: sha, per_page: 100 }),
    );
    const result: CommitChecks = { failed: [], pending: 0, passed: 0 };
    for (const run of runs) {
      if (run.status !== 'completed') result.pending += 1;
      else if (run.conclusion !== null && failing.has(run.conclusion)) {
        const actions = run.app?.slug === 'github-actions';
        const text = [run.output.title, run.output.summary, run.output.text]
          .filter((t): t is string => typeof t === 'string' && t.trim() !== '')
          .join('\n\n');
        result.failed.push({
          name: run.name,
          kind: actions ? 'actions' : 'app',
          conclusion: run.conclusion,
          text,
          ...(actions ? { jobId: run.id } : {}),
          ...(run.html_url ? { url: run.html_url } : {}),
        });
        failedAt(result, run.completed_at);
      } else result.passed += 1;
    }
    for (const status of combined.statuses) {
      if (status.state === 'pending') result.pending += 1;
      else if (status.state === 'success') result.passed += 1;
      else {
        result.failed.push({
          name: status.context,
          kind: 'status',
          conclusion: status.state,
          text: status.description ?? '',
          ...(status.target_url ? { url: status.target_url } : {}),
        });
        failedAt(result, status.updated_at);
      }
    }
    return result;
  }

  /**
   * The log of Actions job `jobId`, its last {@link maxJobLogBytes} at most. GitHub answers
   * 302 with a short-lived download URL on another host: that one is fetched without the
   * token (it is signed), and read as a stream keeping only the end.
   */
  async jobLog(repo: string, jobId: number, signal?: AbortSignal): Promise<string> {
    const { owner, repo: name } = splitRepo(repo);
    const answer = await this.#client.call(`get job ${jobId} logs`, () =>
      this.#client.octokit.request('GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs', {
        owner,
        repo: name,
        job_id: jobId,
        request: { redirect: 'manual', ...(signal ? { signal } : {}) },
      }),
    );
    const location = (answer.headers as Record<string, string | undefined>).location;
    if (answer.status !== 302 || location === undefined) {
      throw new CodefleetError(
        'forge_rejected',
        `GitHub get job ${jobId} logs: expected a redirect to the log, got ${answer.status}`,
      );
    }
    let response: Response;
    try {
      response = await fetch(location, { redirect: 'follow', signal: githubSignal(signal) });
    } catch (error) {
      throw new CodefleetError('network', `downloading the log of job ${jobId} failed: ${noAnswerReason(error)}`, {
        verdict: 'transient',
        cause: error,
      });
    }
    if (!response.ok || response.body === null) {
      // The URL expires after a minute: a later try asks for a new one.
      throw new CodefleetError('forge_unavailable', `downloading the log of job ${jobId}: ${response.status}`, {
        verdict: 'transient',
      });
    }
    return tailOf(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), maxJobLogBytes);
  }
}

/** Keeps the earlier of `at` and what `checks` has as its first failure. */
function failedAt(checks: CommitChecks, at: string | null | undefined): void {
  const when = Date.parse(at ?? '');
  if (Number.isNaN(when)) return;
  if (checks.firstFailedAt === undefined || when < Date.parse(checks.firstFailedAt))
    checks.firstFailedAt = new Date(when).toISOString();
}

/** Reads a stream to its end, keeping the last `max` bytes (as UTF-8 text, a cut character dropped). */
async function tailOf(stream: Readable, max: number): Promise<string> {
  let chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size > 2 * max) {
      const joined = Buffer.concat(chunks);
      chunks = [joined.subarray(joined.length - max)];
      size = max;
    }
  }
  const all = Buffer.concat(chunks);
  const cut = all.length > max;
  const kept = cut ? all.subarray(all.length - max) : all;
  // A cut in the middle of a character leaves continuation bytes: start at the next line.
  const text = kept.toString('utf8');
  return cut ? text.slice(text.indexOf('\n') + 1) : text;
}

interface ApiPullLike {
  number: number;
  state: string;
  title: string;
  body?: string | null;
  head: { ref: string; sha: string; repo?: { full_name: string } | null };
  base: { ref: string };
}

function ciPull(data: ApiPullLike): CiPull {
  return {
    number: data.number,
    state: data.state === 'open' ? 'open' : 'closed',
    title: data.title,
    body: data.body ?? '',
    headRef: data.head.ref,
    headSha: data.head.sha,
    headRepo: data.head.repo?.full_name ?? '',
    baseRef: data.base.ref,
  };
}
