// Public API of @codefleet/github: everything codefleet does on GitHub, in one package.
// - api/: the forge, issues, checks and pull request history over Octokit, App tokens, the failure mapping;
// - producer/: a labeled issue, a review or a failing check (webhook or polling) becomes a job;
// - requester/: a job is reported on its issue or pull request.
export { GithubForge, createGithubForge, githubCredentialEnv, type GithubForgeOptions } from './api/github-forge.js';
export { GithubIssues, createGithubIssues, type GithubPermission, type GithubTask } from './api/github-issues.js';
export { GithubChecks, maxJobLogBytes, type CiPull, type CommitChecks, type FailedCheck } from './api/github-checks.js';
export { createGithubPullHistory, type ClosedPull, type GithubPullHistory } from './api/pull-history.js';
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
export {
  cancelFromIssue,
  followUpFromReview,
  taskKeyOf,
  triggerFromIssue,
  type CiFeedbackSettings,
  type ReviewRequest,
  type TriggerDeps,
  type TriggerOutcome,
  type TriggerRequest,
} from './producer/trigger.js';
export { ciJobId, ciMarkers, ciRequester, followUpFromCi, type CiRequest } from './producer/ci-feedback.js';
export { trimJobLog } from './producer/ci-task.js';
export {
  githubWebhookRoutes,
  payloadOf,
  startWebhookServer,
  type WebhookOptions,
  type WebhookRouteOptions,
  type WebhookServer,
} from './producer/webhook.js';
export {
  deliveryIdOf,
  deliveryJob,
  deliveryOf,
  jobIdOf,
  readDelivery,
  type Delivery,
  type DeliveryIntent,
  type Reading,
} from './producer/delivery.js';
export {
  createDeliveryProcessor,
  deliveryRetryDelayMs,
  type DeliveryProcessor,
  type ProcessedDelivery,
  type ProcessorOptions,
} from './producer/process.js';
export { createPoller, type PollDeps, type PollOptions } from './producer/poll.js';
