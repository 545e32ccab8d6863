import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { FLEET_ACL_RULES, startRedis, type RedisServer } from '@codefleet/testkit';
import { RedisRunStore } from '../src/index.js';
import { runStoreContract } from './contract.js';
import { fleetContract } from './contract-fleet.js';
import { pagesContract } from './contract-pages.js';
import { spendContract } from './contract-spend.js';
import { fillRedis, writeFormerRedis } from './redis-fixtures.js';

// Redis deployed closed: the run store's contracts through the fleet's ACL user (keys
// under codefleet:, no dangerous commands), and a connection the server refuses named
// as such, with the setting to fix, instead of "not reachable".
const fleetPassword = 'fleet-8e3f6a1c2d07';
let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis({
    password: 'admin-5c1e0d2b7a94',
    users: { codefleet: `on >${fleetPassword} ${FLEET_ACL_RULES}` },
  });
});
afterAll(async () => {
  await redis?.stop();
});

const fleetUrl = () => redis.urlAs('codefleet', fleetPassword);
const prefix = () => `codefleet:${randomUUID()}`;

runStoreContract('redis through the fleet ACL user', async () => ({
  store: new RedisRunStore({ url: fleetUrl(), prefix: prefix(), connectTimeoutMs: 10_000 }),
  dispose: async () => undefined,
}));

fleetContract('redis through the fleet ACL user', async (options) => {
  const own = prefix();
  // Damage is done as the admin: the fleet user is not what a corrupt record comes from.
  const admin = new Redis(redis.url);
  return {
    store: new RedisRunStore({ url: fleetUrl(), prefix: own, ...options }),
    corrupt: async (runId: string, text: string) => void (await admin.hset(`${own}:runs:run:${runId}`, 'record', text)),
    dispose: async () => admin.disconnect(),
  };
});

// The page reads (ZINTERCARD, ZRANGESTORE, ZMSCORE) and the migration (ZSCAN, SCAN) are
// commands the fleet user may run.
pagesContract(
  'redis through the fleet ACL user',
  async () => {
    const own = prefix();
    const admin = new Redis(redis.url);
    return {
      store: new RedisRunStore({ url: fleetUrl(), prefix: own }),
      fill: (runs) => fillRedis(admin, own, runs),
      dispose: async () => admin.disconnect(),
    };
  },
  async (old) => {
    const own = prefix();
    const admin = new Redis(redis.url);
    await writeFormerRedis(admin, own, old).finally(() => admin.disconnect());
    return { store: new RedisRunStore({ url: fleetUrl(), prefix: own }), dispose: async () => undefined };
  },
);

spendContract('redis through the fleet ACL user, two clients', async () => {
  const shared = prefix();
  return {
    stores: [
      new RedisRunStore({ url: fleetUrl(), prefix: shared }),
      new RedisRunStore({ url: fleetUrl(), prefix: shared }),
    ],
    dispose: async () => undefined,
  };
});

describe('redis run store, fail-fast, refused by the server', () => {
  it.each([
    ['NOAUTH', () => `redis://127.0.0.1:${redis.port}`],
    ['WRONGPASS', () => redis.urlAs('codefleet', 'not-the-password')],
  ])('%s: store_unavailable, permanent, naming store.redis_url and never the password', async (code, url) => {
    const store = new RedisRunStore({ url: url(), prefix: prefix(), connectTimeoutMs: 10_000 });
    try {
      const error = await store.list().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({
        code: 'store_unavailable',
        verdict: 'permanent',
        message: expect.stringContaining(`store.redis_url (${code})`),
      });
      expect((error as Error).message).toMatch(new RegExp(`^Redis at 127\\.0\\.0\\.1:${redis.port} `));
      expect((error as Error).message).not.toContain('not-the-password');
    } finally {
      await store.close();
    }
  });
});
