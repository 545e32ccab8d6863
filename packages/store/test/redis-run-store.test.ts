import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CodefleetError } from '@codefleet/core';
import { freePort, startRedis, type RedisServer } from '@codefleet/testkit';
import { RedisRunStore } from '../src/index.js';
import { runStoreContract } from './contract.js';
import { fleetContract } from './contract-fleet.js';

// A real redis-server on a random loopback port; every test gets its own key prefix.
let redis: RedisServer;
beforeAll(async () => { redis = await startRedis(); });
afterAll(async () => { await redis?.stop(); });

runStoreContract('redis (real redis-server)', async () => ({
  store: new RedisRunStore({ url: redis.url, prefix: `t-${randomUUID()}` }),
  dispose: async () => undefined,
}));

// The fail-fast store of one-shot CLI commands keeps the same contract when Redis is up.
runStoreContract('redis, fail-fast (real redis-server)', async () => ({
  store: new RedisRunStore({ url: redis.url, prefix: `t-${randomUUID()}`, connectTimeoutMs: 5_000 }),
  dispose: async () => undefined,
}));

fleetContract('redis (real redis-server)', async (options) => ({
  store: new RedisRunStore({ url: redis.url, prefix: `t-${randomUUID()}`, ...options }),
  dispose: async () => undefined,
}));

describe('redis run store, fail-fast, with nothing listening', () => {
  it('rejects every call with store_unavailable naming the cause, never the password', async () => {
    const url = `redis://:hunter2@127.0.0.1:${await freePort()}`;
    const store = new RedisRunStore({ url, prefix: 't', connectTimeoutMs: 2_000 });
    try {
      for (const call of [() => store.list(), () => store.get('r1'), () => store.acquire('k', 'tok', 1_000)]) {
        const error = await call().then(() => undefined, (e: unknown) => e);
        expect(error).toBeInstanceOf(CodefleetError);
        expect(error).toMatchObject({ code: 'store_unavailable', verdict: 'transient', message: expect.stringContaining('ECONNREFUSED') });
        expect((error as Error).message).not.toContain('hunter2');
      }
    } finally {
      await store.close();
    }
  }, 15_000);
});

describe('redis run store, fail-fast, against a peer that accepts and never answers', () => {
  it('gives up after connectTimeoutMs with store_unavailable', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => { sockets.add(socket); });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    const store = new RedisRunStore({ url: `redis://127.0.0.1:${port}`, prefix: 't', connectTimeoutMs: 500 });
    try {
      const error = await store.list().then(() => undefined, (e: unknown) => e);
      expect(error).toMatchObject({ code: 'store_unavailable', message: expect.stringContaining('no answer within 500 ms') });
    } finally {
      await store.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  }, 15_000);
});
