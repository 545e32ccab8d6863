import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Job } from './job.js';

/**
 * Job signing: workers run only jobs a producer of this fleet made.
 *
 * A producer signs the job it enqueues with the fleet key: HMAC-SHA256 over a domain tag,
 * the queue's name, the key id, a timestamp and the canonical encoding of the job (every
 * field but the signature, keys sorted). The signature travels inside the job
 * (`signature: {kid, ts, sig}`), so it survives every queue engine as the job does. A
 * worker verifies before anything else; a job that does not verify is never run.
 *
 * The queue's name is in the MAC so a record signed for a producer's own side queue (a
 * recorded webhook delivery) cannot be replayed onto the jobs' queue.
 *
 * `ts` is recorded and covered, not enforced: jobs legitimately wait in the queue for
 * hours (a backlog, the day budget), retries and redrives deliver the same signed message
 * days later, and a replayed copy of a job the fleet already made converges on the same
 * branch and pull request through its idempotency key and task lease.
 */

/** The signature a producer attaches to a job. */
export interface JobSignature {
  /** Id of the key that signed: {@link fleetKeyId} of it. */
  kid: string;
  /** Epoch ms at signing. */
  ts: number;
  /** Hex HMAC-SHA256. */
  sig: string;
}

/**
 * One fleet key. The secret lives only in the closure of `mac`, so a key logged or
 * serialized by mistake shows its id and nothing else.
 */
export interface FleetKey {
  readonly id: string;
  mac(message: string): string;
}

/** The keys a fleet signs and verifies with: new jobs are signed with `current`; both verify (rotation). */
export interface FleetKeyring {
  readonly current: FleetKey;
  readonly previous?: FleetKey | undefined;
}

/** Why a job did not verify; the first word of its dead-letter reason after `job_unsigned`. */
export type UnsignedWhy = 'missing' | 'unknown_key' | 'bad_signature';

/** The outcome of {@link verifyJob}. */
export type JobVerification = { ok: true; kid: string } | { ok: false; why: UnsignedWhy; detail: string };

/** Fewer characters than this is not a fleet key (a generated one has 64 hex digits). */
export const minFleetKeyChars = 32;

const domain = 'codefleet-job-signature:v1';

/** The key id: the first 8 hex digits of the key's SHA-256, so an envelope names its key without revealing it. */
export function fleetKeyId(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 8);
}

/**
 * A fleet key from its text (an env value or a key file's content, surrounding whitespace
 * ignored). Throws a RangeError naming the length, never the value, when it is too short.
 */
export function fleetKey(text: string): FleetKey {
  const secret = text.trim();
  if (secret.length < minFleetKeyChars) {
    throw new RangeError(`a fleet key needs at least ${minFleetKeyChars} characters, got ${secret.length}`);
  }
  const id = fleetKeyId(secret);
  return { id, mac: (message) => createHmac('sha256', secret).update(message, 'utf8').digest('hex') };
}

/**
 * JSON with object keys sorted at every level and `undefined` members left out, as
 * `JSON.stringify` would: the same job encodes the same way whatever order its keys were
 * built in, on any host.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value))
    return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  const entries = Object.keys(value)
    .sort()
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

/** The job without its signature: what is signed, and what a worker runs. */
export function unsignedJob(job: Job): Job {
  const { signature: _signature, ...rest } = job;
  return rest;
}

function signedMessage(job: Job, queue: string, kid: string, ts: number): string {
  return `${domain}\n${queue}\n${kid}\n${ts}\n${canonicalJson(unsignedJob(job))}`;
}

/**
 * The job with a fresh signature by the keyring's current key for `queue`. Sign the job
 * as it will be stored (parsed, defaults filled): that is what the worker verifies.
 */
export function signJob(job: Job, keyring: FleetKeyring, context: { queue: string; now: number }): Job {
  const { current } = keyring;
  const ts = Math.trunc(context.now);
  const sig = current.mac(signedMessage(job, context.queue, current.id, ts));
  return { ...unsignedJob(job), signature: { kid: current.id, ts, sig } };
}

/** Checks a job's signature against the keyring (current or previous key) for `queue`. */
export function verifyJob(job: Job, keyring: FleetKeyring, context: { queue: string }): JobVerification {
  const { signature } = job;
  if (signature === undefined) return { ok: false, why: 'missing', detail: 'the job carries no signature' };
  const key = [keyring.current, keyring.previous].find((k) => k !== undefined && k.id === signature.kid);
  if (key === undefined) {
    return {
      ok: false,
      why: 'unknown_key',
      detail: `signed with key ${JSON.stringify(signature.kid.slice(0, 16))}, which this host does not hold`,
    };
  }
  const expected = Buffer.from(key.mac(signedMessage(job, context.queue, key.id, signature.ts)), 'hex');
  const given = Buffer.from(signature.sig, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return {
      ok: false,
      why: 'bad_signature',
      detail: `the signature by key ${key.id} does not match the job (altered, or signed for another queue)`,
    };
  }
  return { ok: true, kid: key.id };
}

/** The dead-letter reason of a job that did not verify; it always starts with `job_unsigned`. */
export function unsignedReason(verification: Extract<JobVerification, { ok: false }>): string {
  return `job_unsigned (${verification.why}): ${verification.detail}`;
}
