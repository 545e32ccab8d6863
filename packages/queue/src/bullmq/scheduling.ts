import type { Redis } from 'ioredis';
import type { HeldBy, SlotGroup } from '../concurrency.js';
import type { CancelPendingResult, PendingJob } from '../port.js';
import { bullJobId } from './ids.js';
import type { BullJob, BullQueue } from './bull-classes.js';
import { readJob } from './jobs.js';

/**
 * Aging on BullMQ, whose priorities are fixed at add: the first job of the low and normal
 * bands of the prioritized set (scored band × 2^32 + an enqueue counter, so the first is
 * the one that entered the band first) moves up one band per `agingMs` waited since its
 * enqueue (`timestamp`), keeping its counter, so in its new band it sits among the jobs by
 * when it was enqueued. `cfAged` counts the bands it rose, so its own priority stays known;
 * `priority` is set too, so a retry or a hold puts it back in its aged band. At most 10
 * jobs per band per call.
 * KEYS: prioritized set. ARGV: job key prefix, now, agingMs.
 */
const ageScript = `
local band_size = 4294967296
local now, step = tonumber(ARGV[2]), tonumber(ARGV[3])
local moved = 0
for band = 2, 3 do
  for _ = 1, 10 do
    local first = redis.call('ZRANGEBYSCORE', KEYS[1], band * band_size, (band + 1) * band_size - 1, 'WITHSCORES', 'LIMIT', 0, 1)
    if not first[1] then break end
    local key = ARGV[1] .. first[1]
    local enqueued = tonumber(redis.call('HGET', key, 'timestamp'))
    if not enqueued then break end
    local aged = tonumber(redis.call('HGET', key, 'cfAged') or '0')
    -- BullMQ bands 1 (high) .. 3 (low); its own band before aging is band + aged.
    local target = math.max(1, band + aged - math.floor(math.max(0, now - enqueued) / step))
    if target >= band then break end
    redis.call('ZADD', KEYS[1], target * band_size + tonumber(first[2]) % band_size, first[1])
    redis.call('HSET', key, 'priority', target, 'cfAged', aged + band - target)
    moved = moved + 1
  end
end
return moved
`;

/** Runs one aging pass over `queue`'s prioritized jobs; see {@link ageScript}. */
export async function ageWaiting(redis: Redis, queue: BullQueue, now: number, agingMs: number): Promise<void> {
  await redis.eval(ageScript, 1, queue.toKey('prioritized'), queue.toKey(''), now, agingMs);
}

/** The jobs a group held, by when: a freed slot brings the first forward. */
function heldKey(queue: BullQueue, group: SlotGroup): string {
  return queue.toKey(`cf-held:${group.key}`);
}

/** How long a group's list of held jobs outlives its last hold. */
const heldListMs = 86_400_000;

/**
 * Puts a fetched job that full group `full` holds back in the delayed set until `until`, as
 * if never fetched: the activation BullMQ counted (`ats`) is given back, so the hold spends
 * no attempt, and `cfHeld` on the job says which limit held it. The group's list of held
 * jobs gets it, so a freed slot can bring it forward (`wakeHeld`) before `until`. False
 * when the lock was lost meanwhile (another claimer has the job; nothing to undo).
 */
export async function holdJob(
  redis: Redis,
  queue: BullQueue,
  { fetched, lockToken }: { fetched: BullJob; lockToken: string },
  full: SlotGroup,
  until: number,
): Promise<boolean> {
  const id = fetched.id ?? '';
  const key = queue.toKey(id);
  await redis
    .multi()
    .hincrby(key, 'ats', -1)
    .hset(key, 'cfHeld', JSON.stringify(full.held))
    .zadd(heldKey(queue, full), 'NX', Date.now(), id)
    .pexpire(heldKey(queue, full), heldListMs)
    .exec();
  try {
    await fetched.moveToDelayed(until, lockToken);
    return true;
  } catch {
    await redis.hincrby(key, 'ats', 1).catch(() => undefined);
    return false;
  }
}

/**
 * A slot of each of `groups` was freed: the longest-held job of each that is still
 * delayed is promoted to wait, instead of waiting out its recheck. Members that were
 * claimed meanwhile (by a recheck) are dropped on the way, at most 10 per group.
 */
export async function wakeHeld(redis: Redis, queue: BullQueue, groups: SlotGroup[]): Promise<void> {
  for (const group of groups) {
    for (let i = 0; i < 10; i += 1) {
      const [id] = await redis.zpopmin(heldKey(queue, group));
      if (id === undefined) break;
      const job = (await queue.getJob(id)) as BullJob | undefined;
      if (!job || !(await job.isDelayed())) continue;
      // A job that stopped being delayed just now (its recheck came) is fine to miss.
      await job.promote().catch(() => undefined);
      break;
    }
  }
}

/** Forgets that a job was held (it was claimed at last). */
export async function unhold(redis: Redis, queue: BullQueue, fetched: BullJob): Promise<void> {
  await redis.hdel(queue.toKey(fetched.id ?? ''), 'cfHeld');
}

/**
 * Waiting jobs (wait, prioritized, delayed), longest-waiting first: `limit` of each kind is
 * read, so the answer is exact for the first `limit` of them all.
 */
export async function pendingJobs(redis: Redis, queue: BullQueue, limit: number): Promise<PendingJob[]> {
  // BullMQ reads an end of -1 as "all".
  if (limit <= 0) return [];
  const jobs = (await queue.getJobs(['wait', 'prioritized', 'delayed'], 0, limit - 1, true)) as BullJob[];
  const multi = redis.multi();
  for (const job of jobs) multi.hget(queue.toKey(job.id ?? ''), 'cfHeld');
  const holds = ((await multi.exec()) ?? []).map(([, value]) => value);
  const pending: PendingJob[] = [];
  jobs.forEach((bull, i) => {
    const read = readJob(bull.data);
    if (!('job' in read)) return;
    const { job } = read;
    const held = holds[i];
    pending.push({
      id: job.id,
      repo: job.repo,
      requestedBy: job.requested_by,
      priority: job.priority,
      title: job.title,
      enqueuedAt: bull.timestamp,
      ...(typeof held === 'string' ? { heldBy: JSON.parse(held) as HeldBy } : {}),
    });
  });
  return pending.sort((a, b) => a.enqueuedAt - b.enqueuedAt).slice(0, limit);
}

/** The BullMQ states of a job still waiting: ready, ready by priority, delayed (held ones too). */
const waitingStates = new Set(['wait', 'waiting', 'prioritized', 'delayed']);

/**
 * Removes waiting job `id`: its own BullMQ job, or, once redriven (a new BullMQ id), the one
 * among the first thousand waiting whose payload has the id. BullMQ refuses to remove a
 * locked job, so one a worker claimed meanwhile stays its worker's (`not_found`).
 */
export async function cancelWaiting(queue: BullQueue, id: string): Promise<CancelPendingResult> {
  const own = (await queue.getJob(bullJobId(id))) as BullJob | undefined;
  const candidates = own
    ? [own]
    : ((await queue.getJobs(['wait', 'prioritized', 'delayed'], 0, 999, true)) as (BullJob | undefined)[]);
  for (const bull of candidates) {
    const read = bull ? readJob(bull.data) : undefined;
    if (bull === undefined || read === undefined || !('job' in read) || read.job.id !== id) continue;
    if (!waitingStates.has(await bull.getState())) continue;
    const removed = await bull.remove().then(
      () => true,
      () => false,
    );
    if (removed) return { status: 'cancelled', id, job: read.job };
  }
  return { status: 'not_found' };
}
