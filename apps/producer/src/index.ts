export {
  cancelFromIssue, followUpFromReview, taskKeyOf, triggerFromIssue, type ReviewRequest, type TriggerDeps, type TriggerOutcome, type TriggerRequest,
} from './trigger.js';
export { startWebhookServer, type WebhookOptions, type WebhookServer } from './webhook.js';
export { createPoller, type PollDeps, type PollOptions } from './poll.js';
