import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { CodefleetError } from '@codefleet/core';
import { silentLogger } from '@codefleet/log';
import type { JobResult } from '@codefleet/pipeline';
import type { LocalQueue } from '@codefleet/queue';
import { type DeadLetter, type Queue } from '@codefleet/queue';
import { createTempDir, sampleJob, type TempDir } from '@codefleet/testkit';
import { runWorkerProcess, type WorkerProcessOptions } from '../src/index.js';
import { localQueue } from './local-queue.js';

// The worker process around runWorker, against the real SQLite queue; the pipeline, the
// run store's reads and the workspace sweep are stand-ins passed in, as the CLI passes
// the real ones.
const failedRun = { run_id: 'x', outcome: 'failed' } as unknown as JobResult['run'];

describe('runWorkerProcess', () => {
  let dir: TempDir;
  let queue: LocalQueue;
  beforeEach(async () => {
    dir = await createTempDir('worker-process');
    queue = localQueue(dir.path);
  });
  afterEach(async () => {
    await queue.close();
    await dir.dispose();
  });
  const worker: WorkerProcessOptions['worker'] = {
    workerId: 'w1',
    concurrency: 1,
    heartbeatMs: 200,
    shutdownGraceMs: 5_000,
    log: silentLogger(),
    claimWaitMs: 50,
    once: true,
  };

  it('once: sweeps, reports unfinished dead letters at start and end, counts a failed run, closes what start opened', async () => {
    const dead = sampleJob();
    await queue.enqueue(dead);
    await (await queue.claim({ workerId: 'crashed' }))!.deadLetter('the worker died on its last attempt');
    const job = sampleJob();
    await queue.enqueue(job);
    const reported: string[][] = [];
    const calls: string[] = [];
    const result = await runWorkerProcess({
      queue,
      runJob: async () => {
        calls.push('job');
        return { action: 'ack', run: failedRun };
      },
      worker,
      start: async () => {
        calls.push('start');
        return async () => {
          calls.push('closed');
        };
      },
      sweep: async () => {
        calls.push('sweep');
        return { removed: ['copy'], released: [] };
      },
      // No run recorded for any job: every dead letter is unfinished.
      deadLetters: {
        store: { get: async () => undefined },
        report: async (letters: DeadLetter[]) => {
          reported.push(letters.map((l) => l.job?.id ?? '?'));
        },
      },
    });
    expect(result).toMatchObject({ processed: 1, acked: 1, unsuccessful: 1 });
    expect(calls).toEqual(['start', 'sweep', 'job', 'closed']);
    expect(reported).toEqual([[dead.id], [dead.id]]);
  });

  it('a claim that fails for good stops the worker with that error, and it lets go of the signals', async () => {
    const listeners = process.listenerCount('SIGTERM');
    const damaged = new CodefleetError('invalid_config', 'the queue file is damaged');
    const broken: Queue = Object.create(queue, {
      checkStorage: { value: () => queue.checkStorage() },
      claim: {
        value: async () => {
          throw damaged;
        },
      },
    }) as Queue;
    let closed = false;
    await expect(
      runWorkerProcess({
        queue: broken,
        runJob: async () => ({ action: 'ack', run: failedRun }),
        worker: { ...worker, once: false },
        start: async () => async () => {
          closed = true;
        },
      }),
    ).rejects.toBe(damaged);
    expect(closed).toBe(true);
    expect(process.listenerCount('SIGTERM')).toBe(listeners);
  });
});
