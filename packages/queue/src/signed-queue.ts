import {
  CodefleetError,
  parseJob,
  signJob,
  unsignedJob,
  unsignedReason,
  verifyJob,
  type FleetKeyring,
  type Job,
  type UnsignedWhy,
} from '@codefleet/core';
import type { ClaimOptions, DeadLetter, Lease, Queue, RedriveResult } from './port.js';

/** A job a worker refused because it did not verify; told to {@link JobSigning.onUnsigned}. */
export interface UnsignedJob {
  /** The id the job claims to have (unverified, so only for the log). */
  jobId: string;
  /** The queue it came from. */
  queue: string;
  why: UnsignedWhy;
  /** The dead-letter reason: starts with `job_unsigned`. */
  reason: string;
}

/** How a queue signs and verifies; see {@link signedQueue}. */
export interface JobSigning {
  /**
   * The fleet's keys; a problem text instead when this host has none (a fleet backend
   * without a shared key): then every enqueue, claim and redrive fails with it as an
   * `invalid_config` error, while stats and dead-letter listings still work (doctor).
   */
  keyring: FleetKeyring | { problem: string };
  /** Told before an unverified job is dead-lettered: the log line and metric an operator alerts on. */
  onUnsigned(job: UnsignedJob): void;
  now?: () => number;
}

/**
 * The queue as producers and workers of this fleet use it: `enqueue` signs every job with
 * the fleet key (so no producer has to remember to), and `claim` verifies every job before
 * handing it over. A job that does not verify (no signature, an unknown key, a signature
 * that does not match: written into Redis or the queue file by hand, or altered there) is
 * never returned: it is reported to `onUnsigned` and dead-lettered with a reason starting
 * `job_unsigned`, and the claim goes on to the next job. A lease's job has its signature
 * taken off, so nothing downstream sees or stores it.
 *
 * `deadLetters` lists a dead letter's job only when it verifies (else only its raw payload),
 * so nothing reports a forged job back to the issue or callback it names.
 *
 * `redrive` never re-signs: a dead letter goes back as it was stored. One whose job does
 * not verify is refused (`refused_unsigned`), since it would only be dead-lettered again;
 * a legitimate job dead-lettered because a worker lacked the key is redriven from a host
 * that holds it.
 *
 * What it leaves out: who may delete, delay or reorder jobs (anyone who can write to the
 * engine still can), and replays of a signed job (converged by idempotency keys, see
 * job-signature.ts).
 */
export function signedQueue(queue: Queue, name: string, signing: JobSigning): Queue {
  const now = signing.now ?? Date.now;
  const keyring = (): FleetKeyring => {
    if ('current' in signing.keyring) return signing.keyring;
    throw new CodefleetError('invalid_config', signing.keyring.problem);
  };

  /** The lease as handed over, or undefined once its job was refused and dead-lettered. */
  const admit = async (lease: Lease): Promise<Lease | undefined> => {
    const verified = verifyJob(lease.job, keyring(), { queue: name });
    if (verified.ok) return withJob(lease, unsignedJob(lease.job), admit);
    const reason = unsignedReason(verified);
    // Told first: the alert must not depend on the dead-letter write succeeding.
    signing.onUnsigned({ jobId: lease.job.id, queue: name, why: verified.why, reason });
    await lease.deadLetter(reason);
    return undefined;
  };

  return {
    backend: queue.backend,
    enqueue: async (job: Job) => queue.enqueue(signJob(parseJob(job), keyring(), { queue: name, now: now() })),
    claim: async (options: ClaimOptions) => {
      keyring();
      const deadline = Date.now() + Math.max(0, options.waitMs ?? 0);
      for (;;) {
        const lease = await queue.claim({ ...options, waitMs: Math.max(0, deadline - Date.now()) });
        if (lease === undefined) return undefined;
        const admitted = await admit(lease);
        if (admitted) return admitted;
      }
    },
    stats: () => queue.stats(),
    // Unverified, as stats are: a forged job is listed until a claim dead-letters it.
    pending: (options) => queue.pending(options),
    // The job it names is taken out unrun, signed or not; the one it resolves is unsigned, as a lease's is.
    cancelPending: async (id: string) => {
      const result = await queue.cancelPending(id);
      return result.status === 'cancelled' && result.job !== undefined
        ? { ...result, job: unsignedJob(result.job) }
        : result;
    },
    deadLetters: async (options) =>
      (await queue.deadLetters(options)).map((letter) => withVerifiedJob(letter, signing, name)),
    redrive: async (id: string): Promise<RedriveResult> => {
      const ring = keyring();
      const letter = (await queue.deadLetters({ limit: 1_000 })).find((d) => d.id === id);
      if (letter?.job !== undefined) {
        const verified = verifyJob(letter.job, ring, { queue: name });
        if (!verified.ok) return { status: 'refused_unsigned', reason: unsignedReason(verified) };
      }
      return queue.redrive(id);
    },
    // Signed or not, a dead letter an operator gives up on goes: nothing of it is run.
    drop: (id: string) => queue.drop(id),
    ...(queue.checkStorage ? { checkStorage: () => queue.checkStorage!() } : {}),
    ...(queue.trim ? { trim: queue.trim.bind(queue) } : {}),
    close: () => queue.close(),
  };
}

/**
 * A dead letter keeps its parsed job only when that verifies: everything that acts on a
 * dead letter's job (reporting it back to its issue or callback, the dashboard's links)
 * must never act on a forged one. Its stored payload stays in `raw`.
 */
function withVerifiedJob(letter: DeadLetter, signing: JobSigning, name: string): DeadLetter {
  if (letter.job === undefined) return letter;
  const verified = 'current' in signing.keyring && verifyJob(letter.job, signing.keyring, { queue: name }).ok;
  if (verified) return { ...letter, job: unsignedJob(letter.job) };
  const { job: _unverified, ...rest } = letter;
  return rest;
}

/**
 * The same lease with `job` replaced; its other members are read through, `expiresAt` live.
 * The next lease an `ackAndClaim` brings goes through `admit` too.
 */
function withJob(lease: Lease, job: Job, admit: (lease: Lease) => Promise<Lease | undefined>): Lease {
  const { ackAndClaim } = lease;
  return {
    job,
    attempt: lease.attempt,
    maxAttempts: lease.maxAttempts,
    token: lease.token,
    get expiresAt() {
      return lease.expiresAt;
    },
    heartbeat: () => lease.heartbeat(),
    ack: () => lease.ack(),
    ...(ackAndClaim
      ? {
          ackAndClaim: async () => {
            const next = await ackAndClaim.call(lease);
            // The ack itself succeeded: a refused next job whose dead-lettering failed keeps
            // its lock until it expires, and is refused again on its next delivery.
            return next === undefined ? undefined : admit(next).catch(() => undefined);
          },
        }
      : {}),
    retry: (options) => lease.retry(options),
    deadLetter: (reason) => lease.deadLetter(reason),
    release: () => lease.release(),
  };
}
