// Public API of @codefleet/http-api: the HTTP job API (Fastify) with its OpenAPI description,
// and the requester that reports API jobs to their signed completion webhook.
export { bearerMatches } from './auth.js';
export {
  callbackPayload,
  createCallbackRequester,
  type CallbackPayload,
  type CallbackRequesterOptions,
} from './callback-requester.js';
export { callbackUrlProblem, isLoopbackHost } from './callback-url.js';
export { openApiDocument } from './openapi.js';
export {
  callbackBody,
  createdJob,
  createJobBody,
  errorBody,
  idempotencyKeyPattern,
  jobIdPattern,
  jobStates,
  jobStatus,
} from './schema.js';
export {
  apiJobTtlMs,
  createHttpApi,
  idempotencyTtlMs,
  maxRequestBytes,
  type HttpApi,
  type HttpApiOptions,
} from './server.js';
export { signCallback, verifyCallback, type VerifyCallbackOptions } from './signature.js';
export { linksOf, stateOf, statusBody, type ApiJobRecord, type JobState } from './status.js';
