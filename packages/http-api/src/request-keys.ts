import { requestKeyFamily } from '@codefleet/store';

// The HTTP API's request keys (the run store's `bindRequest`/`lookupRequest`): every one it
// writes is made here.

/** A client's `Idempotency-Key`: the job it made and the request's hash. */
export const idempotencyKey = requestKeyFamily<[key: string]>('http-api', 'idempotency', { formerly: 'api' });
/** A job made through the API, known before any worker claims it. */
export const apiJobKey = requestKeyFamily<[jobId: string]>('http-api', 'job', { formerly: 'api-job' });
/** A completion webhook event already sent. */
export const callbackSentKey = requestKeyFamily<[eventId: string]>('http-api', 'callback', { formerly: 'callback' });
