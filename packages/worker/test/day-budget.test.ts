import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createLogger } from '@codefleet/log';
import type { JobResult } from '@codefleet/pipeline';
import type { LocalQueue } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir, sampleJob, type TempDir, waitFor } from '@codefleet/testkit';
import { DayBudgetGate, runWorker, type DayBudgetState, type JobRunner } from '../src/index.js';
import { localQueue } from './local-queue.js';

// The fleet's day budget against the real SQLite queue and the real run store's ledger;
// the clock is injected, so "the next UTC day" is a value, not a wait.
const fakeRun = { run_id: 'x' } as unknown as JobResult['run'];

describe('runWorker with a daily budget (costs.budget_usd.day)', () => {
  let dir: TempDir;
  let queue: LocalQueue;
  let store: SqliteRunStore;
  beforeEach(async () => {
    dir = await createTempDir('worker-budget');
    queue = localQueue(dir.path);
    store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
  });
  afterEach(async () => {
    await queue.close();
    await store.close();
    await dir.dispose();
  });

  it('claims nothing while the day is spent, says so once, and runs the job on the next UTC day', async () => {
    let now = new Date(Date.UTC(2026, 10, 24, 23, 0, 0));
    await store.addSpend('2026-11-24', 10);
    const job = sampleJob();
    await queue.enqueue(job);
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({
      level: 'info',
      destination: {
        write: (line: string) => {
          lines.push(JSON.parse(line) as Record<string, unknown>);
        },
      },
    });
    const ran: string[] = [];
    const shutdown = new AbortController();
    const runner: JobRunner = async (ctx) => {
      ran.push(ctx.job.id);
      shutdown.abort();
      return { action: 'ack', run: fakeRun };
    };
    const states: DayBudgetState[] = [];
    let reads = 0;
    const ledger = {
      spentOn: async (day: string) => {
        reads += 1;
        return store.spentOn(day);
      },
    };
    const worker = runWorker(queue, runner, {
      workerId: 'w1',
      concurrency: 2,
      heartbeatMs: 200,
      shutdownGraceMs: 5_000,
      shutdown: shutdown.signal,
      log,
      claimWaitMs: 20,
      dayBudget: { ledger, limitUsd: 10, recheckMs: 10, now: () => now },
      onDayBudget: (state) => states.push(state),
    });
    // Many looks at the ledger later: still nothing claimed, the job still waits, one log line.
    await waitFor(() => reads >= 10);
    expect(ran).toEqual([]);
    expect(await queue.stats()).toMatchObject({ ready: 1, inFlight: 0 });
    const paused = lines.filter((l) => l.event === 'budget.day_paused');
    expect(paused).toHaveLength(1);
    expect(paused[0]).toMatchObject({ day: '2026-11-24', spent_usd: 10, limit_usd: 10 });
    expect(paused[0]!.msg).toMatch(
      /spent \$10\.0000 of its \$10\.0000 daily budget .*claiming paused until the next UTC day/,
    );
    expect(states).toEqual([{ paused: true, day: '2026-11-24', spentUsd: 10, limitUsd: 10 }]);

    now = new Date(Date.UTC(2026, 10, 25, 0, 0, 1));
    const summary = await worker;
    expect(ran).toEqual([job.id]);
    expect(summary).toMatchObject({ processed: 1, acked: 1 });
    expect(lines.filter((l) => l.event === 'budget.day_resumed')).toHaveLength(1);
    expect(states.at(-1)).toMatchObject({ paused: false, day: '2026-11-25' });
  });

  it('below the limit it claims as usual; --once with the day spent ends without claiming', async () => {
    const now = () => new Date(Date.UTC(2026, 10, 24, 12));
    await store.addSpend('2026-11-24', 4);
    const job = sampleJob();
    await queue.enqueue(job);
    const ran: string[] = [];
    const runner: JobRunner = async (ctx) => {
      ran.push(ctx.job.id);
      return { action: 'ack', run: fakeRun };
    };
    const base = {
      workerId: 'w1',
      concurrency: 1,
      heartbeatMs: 200,
      shutdownGraceMs: 5_000,
      shutdown: new AbortController().signal,
      log: createLogger({ level: 'silent' }),
      once: true,
    };
    expect(await runWorker(queue, runner, { ...base, dayBudget: { ledger: store, limitUsd: 5, now } })).toMatchObject({
      processed: 1,
    });
    await queue.enqueue(sampleJob());
    await store.addSpend('2026-11-24', 1);
    expect(await runWorker(queue, runner, { ...base, dayBudget: { ledger: store, limitUsd: 5, now } })).toMatchObject({
      processed: 0,
    });
    expect(ran).toEqual([job.id]);
    expect(await queue.stats()).toMatchObject({ ready: 1 });
  });

  it('a ledger that cannot be read does not stop the fleet: the gate stays as it was and says why', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({
      level: 'info',
      destination: {
        write: (line: string) => {
          lines.push(JSON.parse(line) as Record<string, unknown>);
        },
      },
    });
    let failing = false;
    const ledger = {
      spentOn: async (day: string) => {
        if (failing) throw new Error('store down');
        return store.spentOn(day);
      },
    };
    const gate = new DayBudgetGate({ ledger, limitUsd: 1, now: () => new Date(Date.UTC(2026, 10, 24)) }, log);
    failing = true;
    expect(await gate.check()).toBe(true);
    failing = false;
    await store.addSpend('2026-11-24', 1);
    expect(await gate.check()).toBe(false);
    failing = true;
    expect(await gate.check()).toBe(false);
    expect(lines.map((l) => l.event)).toEqual(['budget.day_unreadable', 'budget.day_paused', 'budget.day_unreadable']);
  });
});
