import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from '@jest/globals';
import { startRedis, type RedisServer } from '@codefleet/testkit';
import { RedisRunStore } from '../src/index.js';
import { runStoreContract } from './contract.js';

// A real redis-server on a random loopback port; every test gets its own key prefix.
let redis: RedisServer;
beforeAll(async () => { redis = await startRedis(); });
afterAll(async () => { await redis?.stop(); });

runStoreContract('redis (real redis-server)', async () => ({
  store: new RedisRunStore({ url: redis.url, prefix: `t-${randomUUID()}` }),
  dispose: async () => undefined,
}));
