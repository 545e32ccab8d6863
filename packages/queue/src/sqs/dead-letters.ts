import { parseJobJson, type Job } from '@codefleet/core';
import type { DeadLetter, DropResult, RedriveResult } from '../port.js';
import type { Coordination } from './coordination.js';
import type { RedrivePolicyQueue } from './redrive-queue.js';

/** What the dead-letter operations use of an `SqsQueue`. */
export interface DeadLetterSide {
  coord: Coordination;
  /** The dead-letter queue of the main queue's redrive policy, when one is configured. */
  dlq: RedrivePolicyQueue | undefined;
  maxAttempts: number;
  send: (job: Job, body: string, delaySeconds: number, dedupSuffix?: string) => Promise<void>;
  injectRaw: (payload: string) => Promise<void>;
}

/** The coordination store's dead jobs, then the messages the redrive policy moved, at most `options.limit`. */
export async function listDeadLetters(side: DeadLetterSide, options: { limit?: number }): Promise<DeadLetter[]> {
  const limit = options.limit ?? 1_000;
  const dead = await side.coord.dead(limit);
  const moved = side.dlq && dead.length < limit ? await side.dlq.list(limit - dead.length) : [];
  return [...fromRecords(side, dead), ...moved.map((m) => m.letter)];
}

function fromRecords(side: DeadLetterSide, dead: Awaited<ReturnType<Coordination['dead']>>): DeadLetter[] {
  return dead.map(({ id, record }) => {
    const raw = record.raw ?? '';
    let job: Job | undefined;
    try {
      job = parseJobJson(raw);
    } catch {
      job = undefined;
    }
    return {
      id,
      reason: record.reason ?? 'unknown',
      attempts: Math.min(Number(record.attempts ?? 0), side.maxAttempts),
      deadAt: Number(record.dead_at ?? 0),
      ...(job === undefined ? {} : { job }),
      raw,
    };
  });
}

/** A dead job of the coordination store sent again, else one the redrive policy moved. */
export async function redriveDeadLetter(side: DeadLetterSide, id: string): Promise<RedriveResult> {
  const raw = await side.coord.raw(id);
  const taken = await side.coord.redrive(id, Date.now());
  if (taken.status === 'duplicate') return { status: 'duplicate_active', activeId: taken.activeId };
  if (taken.status === 'not_found' || raw === undefined) return redriveMoved(side, id);
  let job: Job | undefined;
  try {
    job = parseJobJson(raw);
  } catch {
    job = undefined;
  }
  if (job) await side.send(job, raw, 0);
  else await side.injectRaw(raw);
  await side.coord.pending(id, Date.now(), job);
  return { status: 'redriven', id };
}

/** A dead job of the coordination store, else a message the redrive policy moved (deleted from the dead-letter queue). */
export async function dropDeadLetter(side: DeadLetterSide, id: string): Promise<DropResult> {
  if (await side.coord.drop(id)) return { status: 'dropped', id };
  const taken = await side.dlq?.take(id, 30);
  if (!taken || !side.dlq) return { status: 'not_found' };
  await side.dlq.delete(taken.message);
  return { status: 'dropped', id };
}

/**
 * Redrives a message the redrive policy moved: sent to the main queue first, deleted from
 * the dead-letter queue second (a crash in between duplicates, never loses).
 */
async function redriveMoved(side: DeadLetterSide, id: string): Promise<RedriveResult> {
  const taken = await side.dlq?.take(id, 30);
  if (!taken || !side.dlq) return { status: 'not_found' };
  const body = taken.message.Body ?? '';
  if (taken.job) {
    const revived = await side.coord.revive(taken.job.id, taken.job.idempotency_key, Date.now());
    if (revived.status === 'duplicate') {
      await side.dlq.release(taken.message);
      return { status: 'duplicate_active', activeId: revived.activeId };
    }
    await side.send(taken.job, body, 0, `-d${Date.now().toString(36)}`);
    await side.coord.pending(taken.job.id, Date.now(), taken.job);
  } else {
    await side.injectRaw(body);
  }
  await side.dlq.delete(taken.message);
  return { status: 'redriven', id };
}
