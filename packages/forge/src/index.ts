// Public API of @codefleet/forge: the forge port, the input checks and fenced git push every
// adapter shares, the Markdown its bodies and comments are written in, and the local adapter.
// GitHub's adapter lives in @codefleet/github. The contract suite every adapter runs is test
// code, at `@codefleet/forge/contract`.
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
export { escapeInline, fence, table } from './markdown.js';
export { checkMarker, parseMarker, pushedMarker, pushedShaOf, renderMarked } from './marker.js';
export { checkBody, checkBranch, checkLabel, checkPullRequestInput, checkSha, limits, targetKey } from './checks.js';
export { judgeTip, ownStaleTip, pushFenced, remoteBranches, type GitOptions, type TipVerdict } from './git/git.js';
export { taskTrailer, taskTrailerKey, taskTrailerValue } from './git/task-trailer.js';
export { LocalForge, createLocalForge, defaultGitTimeoutMs, type LocalForgeOptions } from './local/local-forge.js';
export {
  createPullRequestStates,
  pullRequestKey,
  type PullRequestKey,
  type PullRequestStateAnswer,
  type PullRequestStates,
  type PullRequestStatesOptions,
} from './pull-request-states.js';
