import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { createTempDir, sampleJob } from '@codefleet/testkit';
import { queueConformance } from './conformance/index.js';
import { LocalQueue } from '../src/index.js';
import type { LocalQueueSettings } from '../src/index.js';

queueConformance({
  name: 'local (SQLite)',
  leaseMs: 600,
  capabilities: { priority: true },
  open: async ({ leaseMs, maxAttempts }) => {
    const dir = await createTempDir('queue');
    const settings: LocalQueueSettings = {
      backend: 'local',
      path: join(dir.path, 'queue.sqlite'),
      name: 'test',
      leaseMs,
      maxAttempts,
      pollMs: 20,
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

  it('refuses nonsense settings with a clear error', () => {
    expect(() => new LocalQueue({ backend: 'local', path: ':memory:', name: 'x', leaseMs: 0, maxAttempts: 1 })).toThrow(
      /leaseMs/,
    );
    expect(
      () => new LocalQueue({ backend: 'local', path: ':memory:', name: 'x', leaseMs: 10, maxAttempts: 0 }),
    ).toThrow(/maxAttempts/);
  });
});
