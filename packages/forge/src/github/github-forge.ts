import { Octokit } from '@octokit/rest';
import { CodefleetError, checkRepoRef, previewValue } from '@codefleet/core';
import { checkBody, checkBranch, checkLabel, checkPullRequestInput, checkSha, targetKey } from '../checks.js';
import { pushFenced, remoteBranches, type GitOptions } from '../git/git.js';
import { parseMarker, renderMarked } from '../marker.js';
import type {
  Comment, CommentTarget, EnsureBranchRequest, EnsureCommentRequest, EnsureLabelsRequest, EnsurePullRequestRequest, Forge, PullRequest,
} from '../port.js';
import { staticToken, type TokenSource } from './app-auth.js';
import { githubFailure } from './errors.js';
import { alreadyExists, createPull, toPullRequest, updatePull, type ApiPull, type PullContext } from './pull-requests.js';

/** Options of {@link createGithubForge}. */
export interface GithubForgeOptions {
  /** A personal access token; used for the API and for git. Or give `tokens`. */
  token?: string;
  /**
   * A refreshing token source (a GitHub App's installation tokens). Git reads the current
   * token from `tokens`' token file, which `tokenFile` must name.
   */
  tokens?: TokenSource;
  tokenFile?: string;
  /** REST API base; default `https://api.github.com` (GitHub Enterprise: `https://host/api/v3`). */
  apiUrl?: string;
  /** Where repositories are cloned from: `https://github.com` by default. */
  gitUrl?: string;
  /** The complete environment of git (PATH, HOME, GIT_CONFIG_*); the credential helper is added. */
  gitEnv: Readonly<Record<string, string>>;
  gitTimeoutMs?: number;
  /** The git binary, resolved once by the worker; default `git` on `gitEnv.PATH`. */
  gitPath?: string;
}

/**
 * The credential helper: answers git's `get` with the token from git's environment (or a
 * file it names), never from a URL, and only for the forge's own protocol and host. The
 * mirror's config is shared with the working copies an agent writes in: a remote URL or an
 * `insteadOf` rewrite planted there points git at another host, which then gets no token.
 */
const credentialHelper = '!f() { test "$1" = get || return 0; p=; h=; '
  + 'while IFS= read -r l && test -n "$l"; do case "$l" in protocol=*) p=${l#protocol=};; host=*) h=${l#host=};; esac; done; '
  + 'test "$p" = "$CODEFLEET_GIT_PROTOCOL" && test "$h" = "$CODEFLEET_GIT_HOST" || return 0; '
  + 'echo username=x-access-token; if [ -n "$CODEFLEET_GIT_TOKEN_FILE" ]; then echo "password=$(cat "$CODEFLEET_GIT_TOKEN_FILE")"; else echo "password=$CODEFLEET_GIT_TOKEN"; fi; }; f';

/**
 * `baseEnv` plus what git needs to authenticate to GitHub at `gitUrl` (`https://github.com`,
 * a GitHub Enterprise origin) with `token`: config through the environment (an empty helper
 * first clears any other one, then ours), the token in a variable only git and its helper
 * see, and the one protocol and host (with its port, as git names it) the helper answers
 * for. For the workspace's clone and fetch as well as the forge's push; never for an agent.
 *
 * No `~/.gitconfig` either, unless `baseEnv` names a global config explicitly: an agent
 * shares the worker's HOME and can write `http.proxy` or `http.sslVerify` there, which would
 * route the token through a server of its choosing. A proxy goes in `https_proxy`.
 */
export function githubCredentialEnv(baseEnv: Readonly<Record<string, string>>, token: string | { tokenFile: string }, gitUrl: string): Record<string, string> {
  const url = new URL(gitUrl);
  return {
    GIT_CONFIG_GLOBAL: '/dev/null',
    ...baseEnv,
    ...(typeof token === 'string' ? { CODEFLEET_GIT_TOKEN: token } : { CODEFLEET_GIT_TOKEN_FILE: token.tokenFile }),
    CODEFLEET_GIT_PROTOCOL: url.protocol.replace(/:$/, ''),
    CODEFLEET_GIT_HOST: url.host,
    GIT_CONFIG_COUNT: '2',
    GIT_CONFIG_KEY_0: 'credential.helper',
    GIT_CONFIG_VALUE_0: '',
    GIT_CONFIG_KEY_1: 'credential.helper',
    GIT_CONFIG_VALUE_1: credentialHelper,
  };
}

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
 * The forge port on GitHub: the REST API through Octokit, git pushes over HTTPS with the
 * token handed to git by a credential helper through the environment, so it never
 * appears in a remote URL, an argument or a log. Repos are `owner/name`.
 */
export class GithubForge implements Forge {
  readonly kind = 'github' as const;
  readonly #octokit: Octokit;
  readonly #git: GitOptions;
  readonly #gitUrl: string;
  readonly #tokens: TokenSource;

  constructor(options: GithubForgeOptions) {
    const tokens = options.tokens ?? (options.token?.trim() ? staticToken(options.token) : undefined);
    if (!tokens) throw new CodefleetError('invalid_config', 'the GitHub forge needs a token (forge.github.token_env names its variable) or GitHub App credentials');
    if (options.tokens && options.tokenFile === undefined) throw new CodefleetError('invalid_config', 'a refreshing token source needs tokenFile, for git');
    // No retries inside Octokit: the worker's outer policy decides, with the reset time.
    this.#octokit = new Octokit({ baseUrl: options.apiUrl ?? 'https://api.github.com', request: { retries: 0 }, log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} } });
    // Every request asks the source, so an App's token is refreshed before it expires.
    this.#octokit.hook.before('request', async (request) => {
      request.headers.authorization = `token ${await tokens.token()}`;
    });
    this.#tokens = tokens;
    this.#gitUrl = (options.gitUrl ?? 'https://github.com').replace(/\/+$/, '');
    const gitToken = options.tokens ? { tokenFile: options.tokenFile ?? '' } : options.token ?? '';
    this.#git = { timeoutMs: options.gitTimeoutMs ?? 120_000, env: githubCredentialEnv(options.gitEnv, gitToken, this.#gitUrl), ...(options.gitPath === undefined ? {} : { gitPath: options.gitPath }) };
  }

  /** Stops the token source's background refresh. */
  close(): void {
    this.#tokens.close();
  }

  remoteUrl(repo: string): string {
    return this.#remote(repo);
  }

  /** The issue (or pull request) `number`: what a job snapshots when it is enqueued. */
  async getTask(repo: string, number: number): Promise<GithubTask> {
    const { owner, repo: name } = splitRepo(repo);
    const { data } = await this.#call(`get issue #${number}`, () => this.#octokit.rest.issues.get({ owner, repo: name, issue_number: number }));
    return {
      number: data.number,
      title: data.title,
      body: data.body ?? '',
      labels: data.labels.map((l) => (typeof l === 'string' ? l : l.name ?? '')).filter((l) => l !== ''),
      author: data.user?.login ?? '',
      state: data.state === 'closed' ? 'closed' : 'open',
      isPullRequest: data.pull_request !== undefined && data.pull_request !== null,
    };
  }

  /** Open issues (not pull requests) carrying `label`: what polling mode looks at. */
  async labeledIssues(repo: string, label: string): Promise<number[]> {
    const { owner, repo: name } = splitRepo(repo);
    const data = await this.#call('list labeled issues', () => this.#octokit.paginate(this.#octokit.rest.issues.listForRepo, { owner, repo: name, labels: label, state: 'open', per_page: 100 }));
    return data.filter((issue) => !issue.pull_request).map((issue) => issue.number);
  }

  /** Who added `label` to issue `number`, one entry per `labeled` event, oldest first. */
  async labelEvents(repo: string, number: number, label: string): Promise<{ id: number; actor: string }[]> {
    const { owner, repo: name } = splitRepo(repo);
    const events = await this.#call('list issue events', () => this.#octokit.paginate(this.#octokit.rest.issues.listEvents, { owner, repo: name, issue_number: number, per_page: 100 }));
    return events
      .filter((e) => e.event === 'labeled' && (e as { label?: { name?: string } }).label?.name?.toLowerCase() === label.toLowerCase())
      .map((e) => ({ id: e.id, actor: e.actor?.login ?? '' }));
  }

  /** Issue and pull request comments updated since `since` (ISO), oldest first. */
  async commentsSince(repo: string, since: string | undefined): Promise<{ id: number; issueNumber: number; body: string; author: string; updatedAt: string }[]> {
    const { owner, repo: name } = splitRepo(repo);
    const data = await this.#call('list issue comments', () => this.#octokit.paginate(this.#octokit.rest.issues.listCommentsForRepo, {
      owner, repo: name, sort: 'updated', direction: 'asc', per_page: 100, ...(since === undefined ? {} : { since }),
    }));
    return data.map((c) => ({
      id: c.id, issueNumber: Number(/\/issues\/(\d+)$/.exec(c.issue_url)?.[1]), body: c.body ?? '', author: c.user?.login ?? '', updatedAt: c.updated_at,
    }));
  }

  /** The inline comments of one review, in order: where the reviewer asked for what. */
  async reviewComments(repo: string, pullNumber: number, reviewId: number): Promise<{ path: string; line?: number; body: string; author: string }[]> {
    const { owner, repo: name } = splitRepo(repo);
    const data = await this.#call('list review comments', () => this.#octokit.paginate(this.#octokit.rest.pulls.listCommentsForReview, {
      owner, repo: name, pull_number: pullNumber, review_id: reviewId, per_page: 100,
    }));
    return data.map((c) => ({ path: c.path, ...(typeof c.line === 'number' ? { line: c.line } : {}), body: c.body, author: c.user?.login ?? '' }));
  }

  /**
   * `login`'s role on `repo`, from the API: the only basis for "may trigger" (never a
   * `[bot]` suffix or an author-association string). Someone without access is `none`.
   */
  async permission(repo: string, login: string): Promise<GithubPermission> {
    const { owner, repo: name } = splitRepo(repo);
    try {
      const { data } = await this.#octokit.rest.repos.getCollaboratorPermissionLevel({ owner, repo: name, username: login });
      // The role when it is a built-in one; a custom role counts by its base permission.
      const known = (value: unknown) => (['admin', 'maintain', 'write', 'triage', 'read'] as const).find((r) => r === value);
      return known((data as { role_name?: string }).role_name) ?? known(data.permission) ?? 'none';
    } catch (error) {
      // GitHub answers 404 for a user who is not a collaborator at all.
      if ((error as { status?: number }).status === 404) return 'none';
      throw githubFailure('get collaborator permission', error);
    }
  }

  async findBranch(repo: string, branch: string, signal?: AbortSignal): Promise<{ sha: string } | undefined> {
    checkBranch(branch);
    await this.#tokens.token();
    const sha = (await remoteBranches(this.#git, this.#remote(repo), [branch], signal)).get(branch);
    return sha === undefined ? undefined : { sha };
  }

  async ensureBranch(req: EnsureBranchRequest): Promise<{ sha: string; updated: boolean }> {
    checkBranch(req.branch);
    if (req.expectedSha !== undefined) checkSha(req.expectedSha);
    await this.#tokens.token();
    return pushFenced(this.#git, { workdir: req.workdir, remote: this.#remote(req.repo), branch: req.branch, expectedSha: req.expectedSha, signal: req.signal, ...(req.sha === undefined ? {} : { sha: req.sha }) });
  }

  async ensurePullRequest(req: EnsurePullRequestRequest): Promise<PullRequest & { created: boolean }> {
    const { owner, repo } = splitRepo(req.repo);
    checkPullRequestInput(req);
    const ctx = this.#pullContext(req.repo, owner, repo);
    const existing = await this.#openPull(owner, repo, req.head);
    if (existing) return { ...(await updatePull(ctx, existing, req)), created: false };
    try {
      return { ...(await createPull(ctx, req)), created: true };
    } catch (error) {
      // Another worker (or a retry whose response was lost) opened it meanwhile: that one is ours.
      if (alreadyExists(error)) {
        const raced = await this.#openPull(owner, repo, req.head);
        if (raced) return { ...(await updatePull(ctx, raced, req)), created: false };
      }
      throw githubFailure('create pull request', error);
    }
  }

  async findPullRequest(repo: string, head: string): Promise<PullRequest | undefined> {
    const { owner, repo: name } = splitRepo(repo);
    checkBranch(head, 'head branch');
    const pulls = await this.#call('list pull requests', () => this.#octokit.rest.pulls.list({ owner, repo: name, head: `${owner}:${head}`, state: 'all', per_page: 100 }));
    const all = (pulls.data as ApiPull[]).map((p) => toPullRequest(p));
    return all.find((p) => p.state === 'open') ?? all.sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0];
  }

  async getPullRequest(repo: string, number: number): Promise<PullRequest> {
    const { owner, repo: name } = splitRepo(repo);
    const { data } = await this.#call(`get pull request #${number}`, () => this.#octokit.rest.pulls.get({ owner, repo: name, pull_number: number }));
    return toPullRequest(data as ApiPull);
  }

  async ensureComment(req: EnsureCommentRequest): Promise<{ id: number; created: boolean }> {
    const { owner, repo } = splitRepo(req.repo);
    const number = issueNumber(req.target);
    const body = renderMarked(req.marker, req.body);
    checkBody(body);
    const mine = (await this.#comments(owner, repo, number)).find((c) => c.marker === req.marker);
    if (mine) {
      if (mine.body !== body) await this.#call('update comment', () => this.#octokit.rest.issues.updateComment({ owner, repo, comment_id: mine.id, body }));
      return { id: mine.id, created: false };
    }
    const { data } = await this.#call('create comment', () => this.#octokit.rest.issues.createComment({ owner, repo, issue_number: number, body }));
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
      labels = names((await this.#call('add labels', () => this.#octokit.rest.issues.addLabels({ owner, repo, issue_number: number, labels: missing }))).data);
    }
    for (const name of remove.filter((n) => has(n) && !add.some((a) => a.toLowerCase() === n.toLowerCase()))) {
      try {
        labels = names((await this.#octokit.rest.issues.removeLabel({ owner, repo, issue_number: number, name })).data);
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
    const { data } = await this.#call('list labels', () => this.#octokit.rest.issues.listLabelsOnIssue({ owner, repo: name, issue_number: issueNumber(target), per_page: 100 }));
    return data.map((l) => l.name).sort((a, b) => a.localeCompare(b));
  }

  /** The remote URL of `owner/name`: no credentials in it, ever. */
  #remote(repo: string): string {
    const { owner, repo: name } = splitRepo(repo);
    return `${this.#gitUrl}/${owner}/${name}.git`;
  }

  async #call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw githubFailure(operation, error);
    }
  }

  async #openPull(owner: string, repo: string, head: string): Promise<ApiPull | undefined> {
    const { data } = await this.#call('list pull requests', () => this.#octokit.rest.pulls.list({ owner, repo, head: `${owner}:${head}`, state: 'open', per_page: 10 }));
    return (data as ApiPull[])[0];
  }

  #pullContext(fullName: string, owner: string, repo: string): PullContext {
    return {
      octokit: this.#octokit, owner, repo, call: (operation, fn) => this.#call(operation, fn),
      labels: async (number, change) => { await this.ensureLabels({ repo: fullName, target: { kind: 'pull', number }, ...change }); },
      comment: async (number, marker, body) => { await this.ensureComment({ repo: fullName, target: { kind: 'pull', number }, marker, body }); },
      hasComment: async (number, marker) => (await this.#comments(owner, repo, number)).some((c) => c.marker === marker),
    };
  }

  async #comments(owner: string, repo: string, number: number): Promise<Comment[]> {
    const data = await this.#call('list comments', () => this.#octokit.paginate(this.#octokit.rest.issues.listComments, { owner, repo, issue_number: number, per_page: 100 }));
    return data.map((c) => {
      const body = c.body ?? '';
      const marker = parseMarker(body);
      return { id: c.id, body, ...(marker === undefined ? {} : { marker }), createdAt: c.created_at, updatedAt: c.updated_at };
    });
  }
}

/** Creates a {@link GithubForge}. */
export function createGithubForge(options: GithubForgeOptions): GithubForge {
  return new GithubForge(options);
}

function splitRepo(repo: string): { owner: string; repo: string } {
  const ref = checkRepoRef(repo);
  if (typeof ref === 'string' || ref.kind !== 'github') {
    throw new CodefleetError('forge_rejected', `the GitHub forge takes owner/name, got ${previewValue(repo)}`);
  }
  const [owner = '', name = ''] = repo.split('/');
  return { owner, repo: name };
}

function issueNumber(target: CommentTarget): number {
  targetKey(target);
  if (target.kind === 'task') throw new CodefleetError('forge_rejected', 'GitHub has no task targets: comment on an issue or a pull request');
  return target.number;
}
