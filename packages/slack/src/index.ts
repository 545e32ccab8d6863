// Public API of @codefleet/slack: the producer (a Bolt app turning mentions and DMs into
// chat requests) and the requester (a job's status message, reactions and final reply).
export { createSlackProducer, type SlackProducer, type SlackProducerOptions } from './producer.js';
export { createSlackRequester, type SlackRequesterOptions } from './requester.js';
export { createSlackClient } from './client.js';
export { slackError } from './errors.js';
export { bounded, codeBlock, escapeMrkdwn, maxMessageChars } from './mrkdwn.js';
export { renderReport, stateReactions, type SlackReportText } from './status.js';
export { checkSlack, type SlackCheck } from './check.js';
