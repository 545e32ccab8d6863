import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { openSqlite } from '@codefleet/sqlite';
import { createTempDir, sampleJob } from '@codefleet/testkit';
import { queueConformance } from './conformance/index.js';
import { LocalQueue } from '../src/index.js';
import type { LocalQueueSettings } from '../src/index.js';

queueConformance({
  name: 'local (SQLite)',
  leaseMs: 600,
  capabilities: { priority: true, trim: true },
  open: async ({ leaseMs, maxAttempts, ...scheduling }) => {
    const dir = await createTempDir('queue');
    const settings: LocalQueueSettings = {
      backend: 'local',
      path: join(dir.path, 'queue.sqlite'),
      name: 'test',
      leaseMs,
      maxAttempts,
      pollMs: 20,
      ...scheduling,
    };
    const queue = new LocalQueue(settings);
    return {
      queue,
      settings,
      injectRaw: async (payload) => {
        await queue.injectRaw(payload);
      },
      dispose: async () => {
        await queue.close();
        await dir.dispose();
      },
    };
  },
});

describe('LocalQueue specifics', () => {
  it('keeps named queues in one file apart', async () => {
    const dir = await createTempDir('queue');
    const base = { backend: 'local' as const, path: join(dir.path, 'q.sqlite'), leaseMs: 1_000, maxAttempts: 2 };
    const a = new LocalQueue({ ...base, name: 'a' });
    const b = new LocalQueue({ ...base, name: 'b' });
    try {
      await a.enqueue(sampleJob());
      expect((await a.stats()).ready).toBe(1);
      expect((await b.stats()).ready).toBe(0);
      expect(await b.claim({ workerId: 'w' })).toBeUndefined();
    } finally {
      await a.close();
      await b.close();
      await dir.dispose();
    }
  });

  it('a file written before concurrency limits gains their columns, filled for the waiting jobs', async () => {
    const dir = await createTempDir('queue');
    const settings: LocalQueueSettings = {
      backend: 'local',
      path: join(dir.path, 'q.sqlite'),
      name: 'q',
      leaseMs: 3_600_000,
      maxAttempts: 2,
    };
    const jobs = [sampleJob({ repo: 'acme/old' }), sampleJob({ repo: 'acme/old' })];
    const before = new LocalQueue(settings);
    for (const job of jobs) await before.enqueue(job);
    await before.close();
    const old = openSqlite(settings.path);
    old.exec('ALTER TABLE jobs DROP COLUMN repo; ALTER TABLE jobs DROP COLUMN requested_by;');
    old.close();
    const queue = new LocalQueue({ ...settings, limits: { perRepo: 1 } });
    try {
      const lease = await queue.claim({ workerId: 'w' });
      expect(lease?.job.id).toBe(jobs[0]!.id);
      expect(await queue.claim({ workerId: 'w' })).toBeUndefined();
      expect(await queue.pending()).toEqual([
        expect.objectContaining({
          id: jobs[1]!.id,
          repo: 'acme/old',
          heldBy: { limit: 'repo', repo: 'acme/old', max: 1 },
        }),
      ]);
    } finally {
      await queue.close();
      await dir.dispose();
    }
  });

  it('refuses nonsense settings with a clear error', () => {
    expect(() => new LocalQueue({ backend: 'local', path: ':memory:', name: 'x', leaseMs: 0, maxAttempts: 1 })).toThrow(
      /leaseMs/,
    );
    expect(
      () => new LocalQueue({ backend: 'local', path: ':memory:', name: 'x', leaseMs: 10, maxAttempts: 0 }),
    ).toThrow(/maxAttempts/);
  });
});
