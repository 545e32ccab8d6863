// Public API of @codefleet/forge: the forge port and its local adapter. The contract
// suite every adapter runs is test code, in test/contract.
export type {
  Comment,
  CommentTarget,
  EnsureBranchRequest,
  EnsureCommentRequest,
  EnsureLabelsRequest,
  EnsurePullRequestRequest,
  Forge,
  IssueTracker,
  PullRequest,
  PullRequestState,
} from './port.js';
export { checkMarker, parseMarker, pushedMarker, pushedShaOf, renderMarked } from './marker.js';
export { limits } from './checks.js';
export { judgeTip, ownStaleTip, type GitOptions, type TipVerdict } from './git/git.js';
export { taskTrailer, taskTrailerKey, taskTrailerValue } from './git/task-trailer.js';
export { LocalForge, createLocalForge, defaultGitTimeoutMs, type LocalForgeOptions } from './local/local-forge.js';
export { GithubForge, createGithubForge, githubCredentialEnv, type GithubForgeOptions } from './github/github-forge.js';
export { GithubIssues, createGithubIssues, type GithubPermission, type GithubTask } from './github/github-issues.js';
export {
  GithubChecks,
  maxJobLogBytes,
  type CiPull,
  type CommitChecks,
  type FailedCheck,
} from './github/github-checks.js';
export type { GithubApiOptions } from './github/client.js';
export {
  githubFailure,
  rateLimitOf,
  retryAfterMs,
  secondaryLimitFloorMs,
  type RateLimitKind,
} from './github/errors.js';
export { githubAppTokens, staticToken, type GithubAppAuth, type TokenSource } from './github/app-auth.js';
export {
  createPullRequestStates,
  pullRequestKey,
  type PullRequestKey,
  type PullRequestStateAnswer,
  type PullRequestStates,
  type PullRequestStatesOptions,
} from './pull-request-states.js';
