import { Octokit } from '@octokit/rest';
import { CodefleetError, checkRepoRef, previewValue } from '@codefleet/core';
import { targetKey, type CommentTarget } from '@codefleet/forge';
import { staticToken, type TokenSource } from './app-auth.js';
import { githubFailure } from './errors.js';
import { enforceGithubOutbound, githubRequestDefaults } from './outbound.js';

/** How to reach GitHub's API: what {@link GithubForge} and {@link GithubIssues} share. */
export interface GithubApiOptions {
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
}

/** One authenticated Octokit and its token source, shared by the forge and the issues. */
export interface GithubClient {
  octokit: Octokit;
  tokens: TokenSource;
  /** Runs one API call, mapping its failure to a `CodefleetError` named by `operation`. */
  call<T>(operation: string, fn: () => Promise<T>): Promise<T>;
}

/** Builds the client under GitHub's outbound policy (outbound.ts): a request timeout, no retries inside Octokit. */
export function githubClient(options: GithubApiOptions): GithubClient {
  const tokens = options.tokens ?? (options.token?.trim() ? staticToken(options.token) : undefined);
  if (!tokens)
    throw new CodefleetError(
      'invalid_config',
      'the GitHub forge needs a token (forge.github.token_env names its variable) or GitHub App credentials',
    );
  if (options.tokens && options.tokenFile === undefined)
    throw new CodefleetError('invalid_config', 'a refreshing token source needs tokenFile, for git');
  const octokit = new Octokit({
    baseUrl: options.apiUrl ?? 'https://api.github.com',
    request: githubRequestDefaults,
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
  enforceGithubOutbound(octokit);
  // Every request asks the source, so an App's token is refreshed before it expires; one
  // GitHub refuses sooner (revoked, a skewed clock) is replaced once, and a second refusal
  // stands (githubFailure: 401 is forge_rejected, permanent).
  octokit.hook.wrap('request', async (request, options) => {
    const used = await tokens.token();
    options.headers.authorization = `token ${used}`;
    try {
      return await request(options);
    } catch (error) {
      if ((error as { status?: unknown }).status !== 401 || tokens.refused?.(used) !== true) throw error;
      options.headers.authorization = `token ${await tokens.token()}`;
      return request(options);
    }
  });
  return {
    octokit,
    tokens,
    async call(operation, fn) {
      try {
        return await fn();
      } catch (error) {
        throw githubFailure(operation, error);
      }
    },
  };
}

/** `owner/name` split; anything else is refused as GitHub's 422 would be. */
export function splitRepo(repo: string): { owner: string; repo: string } {
  const ref = checkRepoRef(repo);
  if (typeof ref === 'string' || ref.kind !== 'github') {
    throw new CodefleetError('forge_rejected', `the GitHub forge takes owner/name, got ${previewValue(repo)}`);
  }
  const [owner = '', name = ''] = repo.split('/');
  return { owner, repo: name };
}

/** The issue or pull request number of a target; GitHub has no task targets. */
export function issueNumber(target: CommentTarget): number {
  targetKey(target);
  if (target.kind === 'task')
    throw new CodefleetError('forge_rejected', 'GitHub has no task targets: comment on an issue or a pull request');
  return target.number;
}
