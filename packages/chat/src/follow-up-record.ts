import { createHash } from 'node:crypto';
import { CodefleetError, createJob, maxBodyChars, routeNames, type Job } from '@codefleet/core';
import { z } from 'zod';
import type { ChatMessage, ChatOutcome } from './port.js';
import { messageKey } from './request-keys.js';

/** The `deferred` outcome a kept follow-up was given: the job it waits for. */
export type Deferred = Extract<ChatOutcome, { kind: 'deferred' }>;

/** A kept follow-up as read back from its record. */
export interface FollowUpRecord {
  message: ChatMessage;
  deferred: Deferred;
  /** When it was first kept (ISO 8601): the day it is kept for counts from here. */
  keptAt: string;
}

// The record is read back from a queue other processes write to: every field is checked,
// strings bounded, before the message goes to the chat service again.
const str = (max: number) => z.string().max(max);
const messageSchema = z.object({
  platform: str(100).min(1),
  channel: str(100).min(1),
  thread: str(100).min(1),
  messageId: str(100).min(1),
  user: str(256).min(1),
  text: str(maxBodyChars),
  access: z.object({ login: str(256).optional(), allowedLocal: z.boolean() }),
  repoHints: z.array(str(1_000)).max(20),
  repo: str(1_000).optional(),
  statusMessageId: str(100).optional(),
  policy: z.object({ forceRoute: z.enum(routeNames).optional(), allowExplicitCode: z.boolean().optional() }).optional(),
  deferFollowUp: z.boolean().optional(),
});
const deferredSchema = z.object({
  kind: z.literal('deferred'),
  jobId: str(128).min(1),
  repo: str(1_000).min(1),
  route: z.object({
    name: z.enum(routeNames),
    source: z.enum(['command', 'rule', 'classifier', 'fallback', 'forced']),
    confidence: z.number().min(0).max(1),
    reason: str(500),
  }),
});
const bodySchema = z.object({ v: z.literal(1), message: messageSchema, deferred: deferredSchema });

/** The record id of a message: every delivery of one message shares it. */
function digestOf(message: ChatMessage): string {
  return createHash('sha256').update(messageKey(message)).digest('hex').slice(0, 40);
}

/**
 * A kept follow-up as a queue record: the job id and idempotency key come from the message
 * key, so keeping the same message twice is one record while it is pending; the message
 * travels as JSON in the body, its text cut (never the rest) until the record fits.
 */
export function followUpJob(message: ChatMessage, deferred: Deferred, now: Date): Job {
  const digest = digestOf(message);
  let kept = message;
  const body = () => JSON.stringify({ v: 1, message: kept, deferred });
  // JSON escapes can grow the text past the body limit.
  while (body().length > maxBodyChars && kept.text !== '') kept = { ...kept, text: kept.text.slice(0, -2_000) };
  return createJob(
    {
      id: `followup-${digest}`,
      idempotency_key: `chat-followup:${digest}`,
      repo: deferred.repo,
      source: { kind: 'record', of: 'chat-follow-up' },
      title: `Chat follow-up waiting for job ${deferred.jobId}`.slice(0, 256),
      body: body(),
      requested_by: (message.access.login ?? message.user).slice(0, 256),
    },
    { id: `followup-${digest}`, now },
  );
}

/** Reads a record back; `invalid_job` (permanent) when it is not one {@link followUpJob} wrote. */
export function followUpOfJob(job: Job): FollowUpRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(job.body);
  } catch {
    throw new CodefleetError('invalid_job', `record ${job.id} is not a chat follow-up (its body is not JSON)`, {
      verdict: 'permanent',
    });
  }
  const checked = bodySchema.safeParse(parsed);
  if (!checked.success)
    throw new CodefleetError('invalid_job', `record ${job.id} is not a chat follow-up this service understands`, {
      verdict: 'permanent',
    });
  const { message, deferred } = checked.data;
  // Optional keys absent rather than undefined (exactOptionalPropertyTypes).
  return {
    message: JSON.parse(JSON.stringify(message)) as ChatMessage,
    deferred: JSON.parse(JSON.stringify(deferred)) as Deferred,
    keptAt: job.created_at,
  };
}
