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
} from './trigger.js';
export { ciJobId, ciMarkers, ciRequester, followUpFromCi, type CiRequest } from './ci-feedback.js';
export { trimJobLog } from './ci-task.js';
export {
  githubWebhookRoutes,
  payloadOf,
  startWebhookServer,
  type WebhookOptions,
  type WebhookRouteOptions,
  type WebhookServer,
} from './webhook.js';
export {
  deliveryIdOf,
  deliveryJob,
  deliveryOf,
  jobIdOf,
  readDelivery,
  type Delivery,
  type DeliveryIntent,
  type Reading,
} from './delivery.js';
export {
  createDeliveryProcessor,
  deliveryRetryDelayMs,
  type DeliveryProcessor,
  type ProcessedDelivery,
  type ProcessorOptions,
} from './process.js';
export { createPoller, type PollDeps, type PollOptions } from './poll.js';
