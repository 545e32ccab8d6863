// Public API of @codefleet/line: the LINE webhook (messages in, through the chat service), the
// requester (a job's outcome pushed back), and the small Messaging API client both use.
export {
  createLineClient,
  isQuotaExhausted,
  maxLineMessages,
  maxLineTextChars,
  retryKeyOf,
  type LineClient,
  type LineClientOptions,
} from './client.js';
export { eventsOf, readEvent, type LineEventReading, type LineTextMessage } from './events.js';
export { createLineRequester, type LineRequesterOptions } from './requester.js';
export { verifyLineSignature } from './signature.js';
export { outcomeText, reportText } from './texts.js';
export {
  createLineWebhook,
  lineEventTtlMs,
  lineMaxBodyBytes,
  type LineWebhook,
  type LineWebhookOptions,
} from './webhook.js';
