import type { Octokit } from '@octokit/rest';
import { CodefleetError } from '@codefleet/core';
import {
  checkBranch,
  checkPullRequestInput,
  checkSha,
  pushFenced,
  remoteBranches,
  type EnsureBranchRequest,
  type EnsurePullRequestRequest,
  type Forge,
  type GitOptions,
  type PullRequest,
  type PullRequestState,
} from '@codefleet/forge';
import type { TokenSource } from './app-auth.js';
import { githubClient, splitRepo, type GithubApiOptions, type GithubClient } from './client.js';
import { githubFailure } from './errors.js';
import { GithubChecks } from './github-checks.js';
import { GithubIssues } from './github-issues.js';
import {
  alreadyExists,
  createPull,
  toPullRequest,
  updatePull,
  type ApiPull,
  type PullContext,
} from './pull-requests.js';

/** Options of {@link createGithubForge}. */
export interface GithubForgeOptions extends GithubApiOptions {
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
const credentialHelper =
  '!f() { test "$1" = get || return 0; p=; h=; ' +
  'while IFS= read -r l && test -n "$l"; do case "$l" in protocol=*) p=${l#protocol=};; host=*) h=${l#host=};; esac; done; ' +
  'test "$p" = "$CODEFLEET_GIT_PROTOCOL" && test "$h" = "$CODEFLEET_GIT_HOST" || return 0; ' +
  'echo username=x-access-token; if [ -n "$CODEFLEET_GIT_TOKEN_FILE" ]; then echo "password=$(cat "$CODEFLEET_GIT_TOKEN_FILE")"; else echo "password=$CODEFLEET_GIT_TOKEN"; fi; }; f';

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
export function githubCredentialEnv(
  baseEnv: Readonly<Record<string, string>>,
  token: string | { tokenFile: string },
  gitUrl: string,
): Record<string, string> {
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

/**
 * The forge port on GitHub: branches and pull requests through the REST API (Octokit), git
 * pushes over HTTPS with the token handed to git by a credential helper through the
 * environment, so it never appears in a remote URL, an argument or a log. Repos are
 * `owner/name`. The issues live in {@link GithubIssues} (`issues`), on the same client.
 */
export class GithubForge implements Forge {
  readonly kind = 'github' as const;
  /** The repositories' issues, on the same client: reads for producers, comments and labels for reports. */
  readonly issues: GithubIssues;
  /** The checks of pull requests' commits and Actions job logs, on the same client: for CI feedback. */
  readonly checks: GithubChecks;
  readonly #client: GithubClient;
  readonly #octokit: Octokit;
  readonly #git: GitOptions;
  readonly #gitUrl: string;
  readonly #tokens: TokenSource;

  constructor(options: GithubForgeOptions) {
    this.#client = githubClient(options);
    this.issues = new GithubIssues(this.#client);
    this.checks = new GithubChecks(this.#client);
    this.#octokit = this.#client.octokit;
    this.#tokens = this.#client.tokens;
    this.#gitUrl = (options.gitUrl ?? 'https://github.com').replace(/\/+$/, '');
    const gitToken = options.tokens ? { tokenFile: options.tokenFile ?? '' } : (options.token ?? '');
    this.#git = {
      timeoutMs: options.gitTimeoutMs ?? 120_000,
      env: githubCredentialEnv(options.gitEnv, gitToken, this.#gitUrl),
      ...(options.gitPath === undefined ? {} : { gitPath: options.gitPath }),
    };
  }

  /** Stops the token source's background refresh. */
  close(): void {
    this.#tokens.close();
  }

  remoteUrl(repo: string): string {
    return this.#remote(repo);
  }

  async findBranch(repo: string, branch: string, signal?: AbortSignal): Promise<{ sha: string } | undefined> {
    checkBranch(branch);
    const sha = (await this.#withToken(() => remoteBranches(this.#git, this.#remote(repo), [branch], signal))).get(
      branch,
    );
    return sha === undefined ? undefined : { sha };
  }

  async ensureBranch(req: EnsureBranchRequest): Promise<{ sha: string; updated: boolean }> {
    checkBranch(req.branch);
    if (req.expectedSha !== undefined) checkSha(req.expectedSha);
    return this.#withToken(() =>
      pushFenced(this.#git, {
        workdir: req.workdir,
        remote: this.#remote(req.repo),
        branch: req.branch,
        expectedSha: req.expectedSha,
        signal: req.signal,
        ...(req.sha === undefined ? {} : { sha: req.sha }),
        ...(req.task === undefined ? {} : { task: req.task }),
      }),
    );
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
    const pulls = await this.#call('list pull requests', () =>
      this.#octokit.rest.pulls.list({ owner, repo: name, head: `${owner}:${head}`, state: 'all', per_page: 100 }),
    );
    const all = (pulls.data as ApiPull[]).map((p) => toPullRequest(p));
    return all.find((p) => p.state === 'open') ?? all.sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0];
  }

  async getPullRequest(repo: string, number: number): Promise<PullRequest> {
    const { owner, repo: name } = splitRepo(repo);
    const { data } = await this.#call(`get pull request #${number}`, () =>
      this.#octokit.rest.pulls.get({ owner, repo: name, pull_number: number }),
    );
    return toPullRequest(data as ApiPull);
  }

  async pullRequestState(repo: string, number: number, signal?: AbortSignal): Promise<PullRequestState> {
    const { owner, repo: name } = splitRepo(repo);
    const operation = `get pull request #${number}`;
    const { data } = await this.#call(operation, () =>
      this.#octokit.rest.pulls.get({
        owner,
        repo: name,
        pull_number: number,
        ...(signal === undefined ? {} : { request: { signal } }),
      }),
    ).catch((error: unknown) => {
      if (signal?.aborted)
        throw new CodefleetError('cancelled', `stopped while reading pull request #${number} of ${repo}`, {
          cause: error,
        });
      throw error;
    });
    // `merged` is the fact; `merged_at` too on every shape GitHub answers with.
    return data.merged || data.merged_at ? 'merged' : data.state === 'open' ? 'open' : 'closed';
  }

  /**
   * Runs a git call that authenticates with the current token (git's helper reads the token
   * file the source keeps). A token the server refuses is replaced once, as for API calls;
   * refused again, the failure stands (`forge_rejected`, permanent), saying so.
   */
  async #withToken<T>(call: () => Promise<T>): Promise<T> {
    const used = await this.#tokens.token();
    try {
      return await call();
    } catch (error) {
      if (!refusedCredentials(error) || this.#tokens.refused?.(used) !== true) throw error;
    }
    await this.#tokens.token();
    try {
      return await call();
    } catch (error) {
      if (!refusedCredentials(error)) throw error;
      throw new CodefleetError(
        'forge_rejected',
        `${(error as Error).message}; refused again with a freshly minted token: the App installation may be suspended or revoked, or lack access to this repository`,
        { verdict: 'permanent', cause: error, details: { auth: true } },
      );
    }
  }

  /** The remote URL of `owner/name`: no credentials in it, ever. */
  #remote(repo: string): string {
    const { owner, repo: name } = splitRepo(repo);
    return `${this.#gitUrl}/${owner}/${name}.git`;
  }

  #call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    return this.#client.call(operation, fn);
  }

  async #openPull(owner: string, repo: string, head: string): Promise<ApiPull | undefined> {
    const { data } = await this.#call('list pull requests', () =>
      this.#octokit.rest.pulls.list({ owner, repo, head: `${owner}:${head}`, state: 'open', per_page: 10 }),
    );
    return (data as ApiPull[])[0];
  }

  #pullContext(fullName: string, owner: string, repo: string): PullContext {
    return {
      octokit: this.#octokit,
      owner,
      repo,
      call: (operation, fn) => this.#call(operation, fn),
      labels: async (number, change) => {
        await this.issues.ensureLabels({ repo: fullName, target: { kind: 'pull', number }, ...change });
      },
      comment: async (number, marker, body) => {
        await this.issues.ensureComment({ repo: fullName, target: { kind: 'pull', number }, marker, body });
      },
      hasComment: async (number, marker) =>
        (await this.issues.listComments(fullName, { kind: 'pull', number })).some((c) => c.marker === marker),
    };
  }
}

/** A git failure whose server refused the credentials (see `gitFailure`). */
function refusedCredentials(error: unknown): boolean {
  return (error as { details?: { auth?: unknown } } | undefined)?.details?.auth === true;
}

/** Creates a {@link GithubForge}. */
export function createGithubForge(options: GithubForgeOptions): GithubForge {
  return new GithubForge(options);
}
