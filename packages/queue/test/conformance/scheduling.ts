/**
 * The conformance tests of what decides which waiting job is claimed: `pending`,
 * concurrency limits per repository and per requester's share, and priority aging.
 * Registered by `queueConformance`; nothing here depends on how fast the machine is:
 * every lease outlasts any stall unless a test is about expiry, and aging is waited out.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from '@jest/globals';
import { sampleJob } from '@codefleet/testkit';
import type { ConcurrencyLimits } from '../../src/concurrency.js';
import type { Queue } from '../../src/port.js';

/** Opens a fresh queue for one test, as the suite's `open` does. */
export type OpenScheduled = (options?: {
  leaseMs?: number;
  limits?: ConcurrencyLimits;
  agingMs?: number;
}) => Promise<{ queue: Queue }>;

/** How long a claim waits for a job that must come; only a hang waits this long. */
const mustComeMs = 120_000;

/** Registers the scheduling tests; `leaseMs` is the harness's shortest reliable lease. */
export function schedulingConformance(open: OpenScheduled, leaseMs: number): void {
  const repoA = 'acme/alpha';
  const repoB = 'acme/beta';

  it('pending lists the waiting jobs, longest-waiting first, and not a running one', async () => {
    const { queue } = await open();
    const first = sampleJob({ repo: repoA, priority: 'low' });
    const second = sampleJob({ repo: repoB, requested_by: 'bob' });
    await queue.enqueue(first);
    // Enqueued a few ms apart: engines that keep the time in ms cannot order a tie.
    await sleep(5);
    await queue.enqueue(second);
    const listed = await queue.pending();
    expect(listed.map((p) => p.id)).toEqual([first.id, second.id]);
    expect(listed[1]).toEqual({
      id: second.id,
      repo: repoB,
      requestedBy: 'bob',
      priority: 'normal',
      title: second.title,
      enqueuedAt: expect.any(Number),
    });
    expect(listed[0]?.priority).toBe('low');
    const lease = await queue.claim({ workerId: 'w', waitMs: 5_000 });
    expect((await queue.pending()).map((p) => p.id)).toEqual([lease!.job.id === first.id ? second.id : first.id]);
    expect(await queue.pending({ limit: 0 })).toEqual([]);
    await lease!.ack();
  });

  it('cancels a waiting job before any claim, held or not, and never a running one', async () => {
    const { queue } = await open({ limits: { perRepo: 1 } });
    const [a1, a2, b1] = [sampleJob({ repo: repoA }), sampleJob({ repo: repoA }), sampleJob({ repo: repoB })];
    for (const job of [a1, a2]) await queue.enqueue(job);
    const running = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
    const held = running!.job.id === a1.id ? a2 : a1;
    // A claim sets the other job of the repository aside: the limit holds it.
    await queue.enqueue(b1);
    const other = await queue.claim({ workerId: 'w2', waitMs: mustComeMs });
    expect(other?.job.id).toBe(b1.id);
    await other!.ack();
    const waiting = sampleJob({ repo: repoB });
    await queue.enqueue(waiting);
    expect(await queue.cancelPending(running!.job.id)).toEqual({ status: 'not_found' });
    expect(await queue.cancelPending('no-such-job')).toEqual({ status: 'not_found' });
    for (const job of [held, waiting]) {
      const cancelled = await queue.cancelPending(job.id);
      expect(cancelled).toMatchObject({ status: 'cancelled', id: job.id });
      // Where the engine keeps the job, it is given back whole.
      if (cancelled.status === 'cancelled' && cancelled.job !== undefined) expect(cancelled.job.title).toBe(job.title);
    }
    expect(await queue.cancelPending(waiting.id)).toEqual({ status: 'not_found' });
    expect(await queue.pending()).toEqual([]);
    // Its slot freed, nothing of the cancelled jobs is delivered; their tasks can be asked for again.
    await running!.ack();
    expect(await queue.claim({ workerId: 'w1', waitMs: 0 })).toBeUndefined();
    const again = sampleJob({ idempotency_key: waiting.idempotency_key, repo: repoB });
    expect(await queue.enqueue(again)).toMatchObject({ id: again.id, deduplicated: false });
    const next = await queue.claim({ workerId: 'w1', waitMs: mustComeMs });
    expect(next?.job.id).toBe(again.id);
    await next!.ack();
  });

  it('per-repository limit: a job over it waits, spends no attempt, and pending says which limit holds it', async () => {
    const { queue } = await open({ limits: { perRepo: 1 } });
    const [a1, a2, b1] = [sampleJob({ repo: repoA }), sampleJob({ repo: repoA }), sampleJob({ repo: repoB })];
    for (const job of [a1, a2]) await queue.enqueue(job);
    const first = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
    const otherA = first!.job.id === a1.id ? a2 : a1;
    await queue.enqueue(b1);
    // The other job of the same repository is passed over for the next repository's.
    const second = await queue.claim({ workerId: 'w2', waitMs: mustComeMs });
    expect(second?.job.id).toBe(b1.id);
    // Held while the first runs; its lease outlasts the test, so nothing but the limit holds it.
    expect(await queue.claim({ workerId: 'w3', waitMs: leaseMs * 2 })).toBeUndefined();
    expect(await queue.pending()).toEqual([
      expect.objectContaining({ id: otherA.id, heldBy: { limit: 'repo', repo: repoA, max: 1 } }),
    ]);
    // Settling frees the slot: a dead letter, as any settle verb.
    await first!.deadLetter('permanent: test');
    const third = await queue.claim({ workerId: 'w3', waitMs: mustComeMs });
    expect(third?.job.id).toBe(otherA.id);
    expect(third?.attempt).toBe(1);
    await third!.ack();
    await second!.ack();
    expect(await queue.stats()).toMatchObject({ depth: 0, inFlight: 0, completed: 2, deadLetter: 1 });
  });

  it("per-requester share: one requester's jobs wait while another's run on the same repository", async () => {
    // 3 slots, a third each: alice may hold 1 of them.
    const { queue } = await open({ limits: { perRepo: 3, perRequesterShare: 0.34 } });
    const [x1, x2, y1] = [
      sampleJob({ repo: repoA, requested_by: 'alice' }),
      sampleJob({ repo: repoA, requested_by: 'alice' }),
      sampleJob({ repo: repoA, requested_by: 'bob' }),
    ];
    for (const job of [x1, x2, y1]) await queue.enqueue(job);
    const first = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
    const second = await queue.claim({ workerId: 'w2', waitMs: mustComeMs });
    expect([first!.job.requested_by, second?.job.requested_by].sort()).toEqual(['alice', 'bob']);
    expect(await queue.claim({ workerId: 'w3', waitMs: leaseMs * 2 })).toBeUndefined();
    const waitingAlice = first!.job.requested_by === 'alice' ? first!.job.id : second!.job.id;
    expect(await queue.pending()).toEqual([
      expect.objectContaining({
        id: waitingAlice === x1.id ? x2.id : x1.id,
        heldBy: { limit: 'requester', repo: repoA, requester: 'alice', max: 1 },
      }),
    ]);
    await (first!.job.requested_by === 'alice' ? first! : second!).release();
    const third = await queue.claim({ workerId: 'w3', waitMs: mustComeMs });
    expect(third?.job.requested_by).toBe('alice');
    expect(third?.attempt).toBe(1);
  });

  it("a slot ends with its lease: a crashed holder does not keep the repository's slot", async () => {
    const { queue } = await open({ leaseMs, limits: { perRepo: 1 } });
    for (let i = 0; i < 2; i += 1) await queue.enqueue(sampleJob({ repo: repoA }));
    const abandoned = await queue.claim({ workerId: 'crashed', waitMs: 5_000 });
    expect(abandoned).toBeDefined();
    // Never heartbeated nor settled: once the lease expires a job of the repository runs again.
    const next = await queue.claim({ workerId: 'w2', waitMs: mustComeMs });
    expect(next?.job.repo).toBe(repoA);
  });

  it('aging: a low-priority job that waited two aging steps goes before a newer high one', async () => {
    const agingMs = 400;
    const { queue } = await open({ agingMs });
    const low = sampleJob({ priority: 'low' });
    await queue.enqueue(low);
    // Measured from when enqueue returned, never from before it: an engine stamps the job
    // somewhere inside the call, which on a loaded machine can be long after it began.
    const enqueuedBy = Date.now();
    // Two steps (low → normal → high) and a margin: a slow machine only waits longer.
    while (Date.now() < enqueuedBy + agingMs * 2 + 200) await sleep(100);
    const high = sampleJob({ priority: 'high' });
    await queue.enqueue(high);
    const first = await queue.claim({ workerId: 'w', waitMs: 5_000 });
    await first!.ack();
    const second = await queue.claim({ workerId: 'w', waitMs: mustComeMs });
    await second!.ack();
    expect([first!.job.id, second!.job.id]).toEqual([low.id, high.id]);
  });
}
