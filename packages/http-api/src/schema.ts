import {
  maxBodyChars,
  maxDodCommands,
  maxHiddenTests,
  maxPatchBytes,
  maxRepoLength,
  maxTestNameChars,
  objectIdPattern,
} from '@codefleet/core';
import type { Report, ReportState } from '@codefleet/requester';

// JSON Schemas of the API, used twice: Fastify validates requests with them, and the OpenAPI
// description is built from the same objects, so the two cannot drift apart. Fine-grained
// checks (a repository reference, a branch name, a DoD command line) are the job model's and
// happen in createJob, which names the field as well.

/** Largest request body. */
export const maxRequestBytes = 1024 * 1024;

/** The body of `POST /v1/jobs`. */
export const createJobBody = {
  type: 'object',
  additionalProperties: false,
  required: ['repo', 'title'],
  properties: {
    repo: {
      type: 'string',
      minLength: 1,
      maxLength: maxRepoLength,
      description: 'GitHub owner/name, or a repository the worker can reach (absolute path, git URL).',
    },
    title: { type: 'string', minLength: 1, maxLength: 256, description: 'One-line task title.' },
    body: { type: 'string', maxLength: maxBodyChars, description: 'Task description, snapshotted into the job.' },
    base_branch: {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      description: 'Branch to start from; default the repository default branch.',
    },
    base_commit: {
      type: 'string',
      pattern: objectIdPattern.source,
      description:
        'Commit to start from (its full id) instead of the base branch head: the job then sees that commit and its history only. The pull request still targets base_branch.',
    },
    patch: {
      type: 'string',
      minLength: 1,
      maxLength: maxPatchBytes,
      description: `A patch applied instead of running an agent (unified diff, JSON commands or Markdown blocks), then verified and published as any change; at most ${maxPatchBytes} bytes of UTF-8.`,
    },
    hidden_tests: {
      type: 'object',
      additionalProperties: false,
      required: ['patch'],
      description:
        "Tests only the verifier applies, after the agent's last attempt, in a copy of its own: never shown to the agent, never published. The run's grade says whether they passed.",
      properties: {
        patch: { type: 'string', minLength: 1, maxLength: maxPatchBytes, description: 'Unified diff of the tests.' },
        tests: {
          type: 'array',
          maxItems: maxHiddenTests,
          items: { type: 'string', minLength: 1, maxLength: maxTestNameChars },
          description: "Tests that must pass, as the verifier's reporters name them; absent: the whole test step.",
        },
      },
    },
    agent: {
      type: 'string',
      pattern: '^[a-z0-9_-]{1,64}$',
      description: 'Configured agent or profile; default agents.default.',
    },
    dod: {
      type: 'array',
      maxItems: maxDodCommands,
      description: 'Definition-of-done commands: argv arrays, or strings split like a shell would (never run by one).',
      items: {
        anyOf: [
          { type: 'string', minLength: 1, maxLength: 4096 },
          { type: 'array', minItems: 1, maxItems: 256, items: { type: 'string', maxLength: 4096 } },
        ],
      },
    },
    priority: { type: 'string', enum: ['low', 'normal', 'high'] },
    type: { type: 'string', enum: ['feature', 'bug', 'refactor'] },
    mode: {
      type: 'string',
      enum: ['change', 'answer'],
      description: 'change: open a pull request; answer: read-only, the answer is reported.',
    },
    callback_url: {
      type: 'string',
      minLength: 1,
      maxLength: 2048,
      description: 'Completion webhook: https (http only on loopback), host in http_api.callback_hosts.',
    },
  },
} as const;

const links = {
  type: 'object',
  required: ['self', 'cancel'],
  properties: { self: { type: 'string' }, cancel: { type: 'string' } },
} as const;

/** Where a job stands, as the API reports it. */
export const jobStates = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;

/** The answer of `POST /v1/jobs` (201, or 200 for a replayed Idempotency-Key). */
export const createdJob = {
  type: 'object',
  required: ['id', 'status', 'links'],
  properties: { id: { type: 'string' }, status: { type: 'string', enum: jobStates }, links },
} as const;

/** The answer of `GET /v1/jobs/:id`. */
export const jobStatus = {
  type: 'object',
  required: ['id', 'status', 'repo', 'attempts', 'links'],
  properties: {
    id: { type: 'string' },
    status: { type: 'string', enum: jobStates },
    repo: { type: 'string' },
    mode: { type: 'string', enum: ['change', 'answer'] },
    stage: { type: 'string', description: "The run's stage (preparing … publishing, done, failed, cancelled)." },
    outcome: { type: 'string', description: 'succeeded, failed, cancelled, no_changes or dod_failed, once finished.' },
    attempts: { type: 'integer', minimum: 0 },
    pull_request: {
      type: 'object',
      required: ['number', 'draft'],
      properties: { number: { type: 'integer' }, url: { type: 'string' }, draft: { type: 'boolean' } },
    },
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    },
    answer: { type: 'string', description: "An answer-mode job's answer." },
    cancel_requested: { type: 'boolean' },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
    links,
  },
} as const;

/** A job id in a path: checked before the store is asked (a run-store key is bounded). */
export const jobIdPattern = '^[A-Za-z0-9._:-]{1,128}$';
/** An Idempotency-Key: 1..255 visible ASCII characters (no spaces or control characters). */
export const idempotencyKeyPattern = '^[\\x21-\\x7e]{1,255}$';

const callbackEvents = [
  'queued',
  'started',
  'finished',
  'answered',
  'failed',
  'cancelled',
] as const satisfies readonly Exclude<Report['kind'], 'progress'>[];
const callbackStates = [
  'queued',
  'running',
  'done',
  'answered',
  'failed',
  'cancelled',
] as const satisfies readonly ReportState[];

/** The JSON body of a completion webhook (`CallbackPayload` of the callback requester), as a JSON Schema. */
export const callbackBody = {
  type: 'object',
  required: ['event', 'job_id', 'state', 'message'],
  properties: {
    event: {
      type: 'string',
      enum: callbackEvents,
      description: 'What happened; X-Codefleet-Event-Id is `<job_id>:<event>`.',
    },
    job_id: { type: 'string' },
    state: { type: 'string', enum: callbackStates },
    pr_url: { type: 'string', description: 'finished: the pull request.' },
    reason: { type: 'string', description: 'failed: why, secrets masked, at most 4 000 characters.' },
    error_code: { type: 'string', description: 'failed: the stable error code.' },
    answer: { type: 'string', description: 'answered: the answer of an answer-mode job.' },
    cancelled_by: { type: 'string', description: 'cancelled: who asked.' },
    message: { type: 'string', description: 'The same words a chat user is told, plain text.' },
  },
} as const;

/** Every error answer. */
export const errorBody = {
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: {
      type: 'string',
      description:
        'A stable code: unauthorized, invalid_request, invalid_json, unsupported_media_type, too_large, not_found, conflict, ' +
        "already_finished, idempotency_key_reused, callback_not_allowed, internal, or the queue's error code (queue_unavailable …).",
    },
    message: { type: 'string' },
    field: { type: 'string', description: 'The request field at fault, for invalid_request.' },
  },
} as const;
