// Public API of @codefleet/github: everything codefleet does on GitHub, in one package. The
// API adapters (the forge, issues and checks over Octokit, App tokens, the failure mapping)
// and the issue requester that reports a job on its issue or pull request.
export { GithubForge, createGithubForge, githubCredentialEnv, type GithubForgeOptions } from './api/github-forge.js';
export { GithubIssues, createGithubIssues, type GithubPermission, type GithubTask } from './api/github-issues.js';
export { GithubChecks, maxJobLogBytes, type CiPull, type CommitChecks, type FailedCheck } from './api/github-checks.js';
export type { GithubApiOptions } from './api/client.js';
export { githubFailure, rateLimitOf, retryAfterMs, secondaryLimitFloorMs, type RateLimitKind } from './api/errors.js';
export { githubAppTokens, staticToken, type GithubAppAuth, type TokenSource } from './api/app-auth.js';
export {
  createIssueRequester,
  type IssueRequesterOptions,
  type IssueThreads,
  type ProgressLabels,
} from './requester/issue-requester.js';
export { failureComment, successComment } from './requester/issue-comments.js';
