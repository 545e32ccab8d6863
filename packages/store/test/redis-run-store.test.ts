import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { advance, CodefleetError, createJob, newRun, startAttempt } from '@codefleet/core';
import { closedPort, startRedis, type RedisServer } from '@codefleet/testkit';
import { RedisRunStore, type RunIndexEvent } from '../src/index.js';
import { job, runStoreContract } from './contract.js';
import { fleetContract } from './contract-fleet.js';
import { pagesContract } from './contract-pages.js';
import { spendContract } from './contract-spend.js';
import { retentionContract } from './contract-retention.js';
import { fillRedis, writeFormerRedis } from './redis-fixtures.js';

// A real redis-server on a random loopback port; every test gets its own key prefix.
let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

runStoreContract('redis (real redis-server)', async () => ({
  store: new RedisRunStore({ url: redis.url, prefix: `t-${randomUUID()}` }),
  dispose: async () => undefined,
}));

// The fail-fast store of one-shot CLI commands keeps the same contract when Redis is up.
runStoreContract('redis, fail-fast (real redis-server)', async () => ({
  store: new RedisRunStore({ url: redis.url, prefix: `t-${randomUUID()}`, connectTimeoutMs: 5_000 }),
  dispose: async () => undefined,
}));

fleetContract('redis (real redis-server)', async (options) => {
  const prefix = `t-${randomUUID()}`;
  const raw = new Redis(redis.url);
  return {
    store: new RedisRunStore({ url: redis.url, prefix, ...options }),
    corrupt: async (runId: string, text: string) =>
      void (await raw.hset(`${prefix}:runs:run:${runId}`, 'record', text)),
    dispose: async () => raw.disconnect(),
  };
});

pagesContract(
  'redis (real redis-server)',
  async () => {
    const prefix = `t-${randomUUID()}`;
    const raw = new Redis(redis.url);
    return {
      store: new RedisRunStore({ url: redis.url, prefix }),
      fill: (runs) => fillRedis(raw, prefix, runs),
      dispose: async () => raw.disconnect(),
    };
  },
  async (old) => {
    const prefix = `t-${randomUUID()}`;
    const raw = new Redis(redis.url);
    await writeFormerRedis(raw, prefix, old).finally(() => raw.disconnect());
    return { store: new RedisRunStore({ url: redis.url, prefix }), dispose: async () => undefined };
  },
);

retentionContract('redis (real redis-server)', async () => ({
  store: new RedisRunStore({ url: redis.url, prefix: `t-${randomUUID()}` }),
  dispose: async () => undefined,
}));

spendContract('redis, two clients on one prefix (real redis-server)', async () => {
  const prefix = `t-${randomUUID()}`;
  return {
    stores: [new RedisRunStore({ url: redis.url, prefix }), new RedisRunStore({ url: redis.url, prefix })],
    dispose: async () => undefined,
  };
});

describe('redis run store, rejected late writes', () => {
  it('keeps the newest 100 of a task, for 90 days past the newest', async () => {
    const prefix = `t-${randomUUID()}`;
    const raw = new Redis(redis.url);
    const store = new RedisRunStore({ url: redis.url, prefix });
    try {
      for (let i = 0; i < 105; i += 1) expect(await store.fence('task-1', 'stale', `push-${i}`, 'job-1')).toBe(false);
      const kept = await store.rejections('task-1');
      expect(kept.map((r) => r.action)).toEqual(Array.from({ length: 100 }, (_, i) => `push-${i + 5}`));
      const ttl = await raw.pttl(`${prefix}:runs:rejected:task-1`);
      expect(ttl).toBeGreaterThan(89 * 86_400_000);
      expect(ttl).toBeLessThanOrEqual(90 * 86_400_000);
    } finally {
      raw.disconnect();
      await store.close();
    }
  });
});

describe('redis run store, fail-fast, with nothing listening', () => {
  it('rejects every call with store_unavailable naming the cause, never the password', async () => {
    const url = `redis://:hunter2@127.0.0.1:${await closedPort()}`;
    const store = new RedisRunStore({ url, prefix: 't', connectTimeoutMs: 2_000 });
    try {
      for (const call of [() => store.list(), () => store.get('r1'), () => store.acquire('k', 'tok', 1_000)]) {
        const error = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(CodefleetError);
        expect(error).toMatchObject({
          code: 'store_unavailable',
          verdict: 'transient',
          message: expect.stringContaining('ECONNREFUSED'),
        });
        expect((error as Error).message).not.toContain('hunter2');
      }
    } finally {
      await store.close();
    }
  });
});

describe('redis run store, fail-fast, against a peer that accepts and never answers', () => {
  it('gives up after connectTimeoutMs with store_unavailable', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    const store = new RedisRunStore({ url: `redis://127.0.0.1:${port}`, prefix: 't', connectTimeoutMs: 500 });
    try {
      const error = await store.list().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({
        code: 'store_unavailable',
        message: expect.stringContaining('no answer within 500 ms'),
      });
    } finally {
      await store.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('redis run store written before the run indexes', () => {
  it('indexes its runs at the first read, says so, and drops the sets of the version before', async () => {
    const prefix = `t-${randomUUID()}`;
    const raw = new Redis(redis.url);
    const events: RunIndexEvent[] = [];
    const store = new RedisRunStore({ url: redis.url, prefix, onIndexMigration: (event) => events.push(event) });
    try {
      const old = advance(
        startAttempt(newRun(job(1), { runId: 'job-1', now: new Date() }), { workerId: 'w', now: new Date() }),
        'preparing',
        { now: new Date() },
      );
      await writeFormerRedis(raw, prefix, {
        runs: [old, newRun(job(2), { runId: 'job-2', now: new Date() })],
        notJson: { runId: 'job-3', createdAt: new Date().toISOString() },
      });
      expect(await store.page({ state: 'preparing' })).toMatchObject({ runs: [{ runId: 'job-1' }], total: 1 });
      expect(events).toEqual([
        { event: 'started', store: 'redis', schema: 2 },
        { event: 'finished', store: 'redis', schema: 2, runs: 3, durationMs: expect.any(Number) },
      ]);
      const left = await raw.keys(`${prefix}:runs:*`);
      expect(left.filter((key) => /:runs:(active|indexes-complete|by-repo:.*|by-source:.*)$/.test(key))).toEqual([]);
      expect(await raw.get(`${prefix}:runs:index-version`)).toBe('2');
      // Another store on it finds nothing left to do.
      const again = new RedisRunStore({ url: redis.url, prefix, onIndexMigration: (event) => events.push(event) });
      expect((await again.page({})).total).toBe(3);
      await again.close();
      expect(events).toHaveLength(2);
    } finally {
      raw.disconnect();
      await store.close();
    }
  });

  it('filters runs saved without facets or indexes as it does new ones', async () => {
    const prefix = `t-${randomUUID()}`;
    const raw = new Redis(redis.url);
    const store = new RedisRunStore({ url: redis.url, prefix });
    try {
      // What an older version wrote: the record and the by-created index, nothing else.
      const old = advance(
        startAttempt(newRun(job(1), { runId: 'job-1', now: new Date(Date.UTC(2026, 0, 1)) }), {
          workerId: 'w',
          now: new Date(Date.UTC(2026, 0, 1, 0, 0, 1)),
        }),
        'preparing',
        { now: new Date(Date.UTC(2026, 0, 1, 0, 0, 1)) },
      );
      await raw.hset(`${prefix}:runs:run:job-1`, 'version', '0', 'record', JSON.stringify(old));
      await raw.zadd(`${prefix}:runs:by-created`, Date.UTC(2026, 0, 1), 'job-1');
      await store.save(newRun(job(2), { runId: 'job-2', now: new Date(Date.UTC(2026, 0, 2)) }));
      expect((await store.list({ state: 'active' })).map((r) => r.runId)).toEqual(['job-2', 'job-1']);
      expect((await store.list({ repo: '/srv/repos/widgets', state: 'preparing' })).map((r) => r.runId)).toEqual([
        'job-1',
      ]);
      expect((await store.list({ source: 'cli' })).map((r) => r.runId)).toEqual(['job-2', 'job-1']);
    } finally {
      raw.disconnect();
      await store.close();
    }
  });

  it('lists a run whose facets hold the source kind under its source name', async () => {
    const prefix = `t-${randomUUID()}`;
    const raw = new Redis(redis.url);
    const store = new RedisRunStore({ url: redis.url, prefix });
    try {
      const followUp = createJob(
        {
          repo: '/srv/repos/widgets',
          source: { kind: 'api', request_id: 'ci:/srv/repos/widgets#3' },
          title: 't',
          requested_by: 'ci',
        },
        { id: 'job-1', now: new Date(Date.UTC(2026, 0, 1)) },
      );
      await store.save(newRun(followUp, { runId: 'job-1', now: new Date(Date.UTC(2026, 0, 1)) }));
      // What the version before source names kept beside the record: the kind as `source`.
      const facets = { stage: 'queued', repo: '/srv/repos/widgets', source: 'api' };
      await raw.hset(`${prefix}:runs:run:job-1`, 'facets', JSON.stringify(facets));
      expect((await store.list({ source: 'ci-follow-up' })).map((r) => r.runId)).toEqual(['job-1']);
      expect((await store.list({ source: 'api' })).map((r) => r.runId)).toEqual(['job-1']);
      expect(await store.list({ source: 'http-api' })).toEqual([]);
    } finally {
      raw.disconnect();
      await store.close();
    }
  });
});
