/**
 * The conformance test of retention (`Queue.trim`), for the adapters that keep finished
 * jobs themselves (local, BullMQ); registered by `queueConformance` when the harness says so.
 */
import { expect, it } from '@jest/globals';
import { sampleJob } from '@codefleet/testkit';
import type { Queue } from '../../src/port.js';

/** Registers the retention test; `open` opens a fresh queue as the suite's does. */
export function retentionConformance(open: () => Promise<{ queue: Queue }>): void {
  it('trim deletes finished jobs and dead letters from before a time, in batches, never a pending one', async () => {
    const { queue } = await open();
    for (let i = 0; i < 3; i += 1) await queue.enqueue(sampleJob({ title: `job ${i}` }));
    for (let i = 0; i < 3; i += 1) {
      const lease = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
      if (i < 2) await lease!.ack();
      else await lease!.deadLetter('given up');
    }
    const waiting = sampleJob({ title: 'still waiting' });
    await queue.enqueue(waiting);
    const trim = queue.trim!.bind(queue);
    expect(await trim({ before: Date.now() - 3_600_000 })).toEqual({ completed: 0, deadLetters: 0 });
    expect(await queue.stats()).toMatchObject({ completed: 2, deadLetter: 1, depth: 1 });
    expect(await trim({ before: Date.now() + 1_000, batch: 1 })).toEqual({ completed: 2, deadLetters: 1 });
    expect(await queue.stats()).toMatchObject({ completed: 0, deadLetter: 0, depth: 1 });
    expect(await queue.deadLetters()).toEqual([]);
    const lease = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
    expect(lease?.job.id).toBe(waiting.id);
    await lease!.ack();
  });

  it('trim keeps the newest completed jobs by count and never counts a dead letter out', async () => {
    const { queue } = await open();
    const finish = async (title: string, dead = false) => {
      const job = sampleJob({ title });
      await queue.enqueue(job);
      const lease = await queue.claim({ workerId: 'w1', waitMs: 5_000 });
      expect(lease?.job.id).toBe(job.id);
      if (dead) await lease!.deadLetter('given up');
      else await lease!.ack();
      // Finish times a few ms apart, so "newest" is well defined on every engine.
      await new Promise((resolve) => setTimeout(resolve, 5));
      return job.id;
    };
    for (let i = 0; i < 3; i += 1) await finish(`done ${i}`);
    const cut = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 5));
    for (let i = 3; i < 5; i += 1) await finish(`done ${i}`);
    const dead = await finish('dead', true);
    const trim = queue.trim!.bind(queue);
    expect(await trim({ keepCompleted: 2, batch: 2 })).toEqual({ completed: 3, deadLetters: 0 });
    expect(await queue.stats()).toMatchObject({ completed: 2, deadLetter: 1 });
    expect((await queue.deadLetters()).map((letter) => letter.job?.id)).toEqual([dead]);
    expect(await trim({ keepCompleted: 2 })).toEqual({ completed: 0, deadLetters: 0 });
    expect(await trim({})).toEqual({ completed: 0, deadLetters: 0 });
    // The two kept are the newest: both finished after `cut`, so an age trim there takes none.
    expect(await trim({ before: cut })).toEqual({ completed: 0, deadLetters: 0 });
    expect(await queue.stats()).toMatchObject({ completed: 2, deadLetter: 1 });
  });
}
