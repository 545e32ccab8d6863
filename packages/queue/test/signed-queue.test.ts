import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { classify, fleetKey, signJob, type FleetKeyring } from '@codefleet/core';
import { openSqlite } from '@codefleet/sqlite';
import {
  createTempDir,
  otherTestFleetKey,
  type RedisServer,
  sampleJob,
  startRedis,
  testFleetKey,
} from '@codefleet/testkit';
import { BullmqQueue } from '../src/bullmq/bullmq-queue.js';
import { queueConformance } from './conformance/index.js';
import { LocalQueue, signedQueue, type LocalQueueSettings, type Queue, type UnsignedJob } from '../src/index.js';

const keyring: FleetKeyring = { current: fleetKey(testFleetKey) };

/** A signed queue over `inner`, with what it refused. */
function signed(
  inner: Queue,
  name: string,
  ring: FleetKeyring | { problem: string } = keyring,
): { queue: Queue; refused: UnsignedJob[] } {
  const refused: UnsignedJob[] = [];
  return { queue: signedQueue(inner, name, { keyring: ring, onUnsigned: (job) => refused.push(job) }), refused };
}

async function localQueue(
  name = 'test',
): Promise<{ inner: LocalQueue; settings: LocalQueueSettings; dispose(): Promise<void> }> {
  const dir = await createTempDir('signed-queue');
  const settings: LocalQueueSettings = {
    backend: 'local',
    path: join(dir.path, 'queue.sqlite'),
    name,
    leaseMs: 2_000,
    maxAttempts: 3,
    pollMs: 20,
  };
  const inner = new LocalQueue(settings);
  return {
    inner,
    settings,
    dispose: async () => {
      await inner.close();
      await dir.dispose();
    },
  };
}

// Signing must keep every promise of the port: the whole suite, through a signed local queue.
queueConformance({
  name: 'local (SQLite), signed',
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
    const inner = new LocalQueue(settings);
    return {
      queue: signed(inner, settings.name).queue,
      settings,
      injectRaw: async (payload) => {
        await inner.injectRaw(payload);
      },
      dispose: async () => {
        await inner.close();
        await dir.dispose();
      },
    };
  },
});

describe('a signed local queue', () => {
  it('refuses rows written into the queue file by hand, unsigned or altered, and still delivers the signed job', async () => {
    const { inner, settings, dispose } = await localQueue();
    const { queue, refused } = signed(inner, settings.name);
    try {
      const good = sampleJob();
      await queue.enqueue(good);
      // What a process that can write the file could do: copy the signed row with the repository
      // changed, and add a plain job with no signature at all, both ahead of the good one.
      const db = openSqlite(settings.path);
      const row = db.prepare('SELECT payload FROM jobs WHERE id = ?').get(good.id) as { payload: string };
      const copy = { ...(JSON.parse(row.payload) as object), id: 'forged-copy', repo: 'victim/other' };
      const plain = sampleJob({ id: 'forged-plain', repo: 'victim/other' });
      const insert =
        db.prepare(`INSERT INTO jobs (queue, id, idempotency_key, payload, state, priority, max_attempts, available_at, enqueued_at)
        VALUES (?, ?, ?, ?, 'ready', 10, 3, 0, 0)`);
      insert.run(settings.name, 'forged-copy', 'k1', JSON.stringify(copy));
      insert.run(settings.name, 'forged-plain', 'k2', JSON.stringify(plain));
      db.close();

      const lease = await queue.claim({ workerId: 'w', waitMs: 2_000 });
      expect(lease?.job).toEqual(good);
      expect(lease?.job.signature).toBeUndefined();
      await lease!.ack();
      expect(refused.map((r) => [r.jobId, r.why])).toEqual([
        ['forged-copy', 'bad_signature'],
        ['forged-plain', 'missing'],
      ]);
      const dead = await queue.deadLetters();
      expect(dead.map((d) => [d.id, d.reason.split(' ')[0], d.job])).toEqual([
        ['forged-copy', 'job_unsigned', undefined],
        ['forged-plain', 'job_unsigned', undefined],
      ]);
      // The raw listing still has the payload, for the operator.
      expect(dead[0]?.raw).toContain('victim/other');
      // Redrive would only dead-letter them again, and must never re-sign them.
      expect(await queue.redrive('forged-copy')).toEqual({
        status: 'refused_unsigned',
        reason: expect.stringMatching(/^job_unsigned \(bad_signature\)/),
      });
      expect((await inner.stats()).deadLetter).toBe(2);
    } finally {
      await dispose();
    }
  });

  it('a job signed for a side queue is refused on the jobs queue', async () => {
    const { inner, settings, dispose } = await localQueue('codefleet');
    const { queue, refused } = signed(inner, settings.name);
    try {
      const job = signJob(sampleJob(), keyring, { queue: 'codefleet-deliveries', now: Date.now() });
      await inner.injectRaw(JSON.stringify(job));
      expect(await queue.claim({ workerId: 'w', waitMs: 200 })).toBeUndefined();
      expect(refused.map((r) => r.why)).toEqual(['bad_signature']);
    } finally {
      await dispose();
    }
  });

  it("during a key rotation jobs of the previous key still run; a stranger's key does not", async () => {
    const { inner, settings, dispose } = await localQueue();
    const previous = fleetKey(otherTestFleetKey);
    const before = signed(inner, settings.name, { current: previous });
    const during = signed(inner, settings.name, { current: keyring.current, previous });
    const after = signed(inner, settings.name, keyring);
    try {
      const old = sampleJob();
      await before.queue.enqueue(old);
      const lease = await during.queue.claim({ workerId: 'w', waitMs: 2_000 });
      expect(lease?.job.id).toBe(old.id);
      await lease!.ack();
      await before.queue.enqueue(sampleJob());
      expect(await after.queue.claim({ workerId: 'w', waitMs: 200 })).toBeUndefined();
      expect(after.refused.map((r) => r.why)).toEqual(['unknown_key']);
    } finally {
      await dispose();
    }
  });

  it('without a key it enqueues and claims nothing, naming the fix, but still answers stats', async () => {
    const { inner, settings, dispose } = await localQueue();
    const { queue } = signed(inner, settings.name, { problem: 'no fleet key: run `codefleet init`' });
    try {
      const error = await queue.enqueue(sampleJob()).catch((e: unknown) => e);
      expect(classify(error)).toMatchObject({
        code: 'invalid_config',
        message: expect.stringContaining('codefleet init'),
      });
      await expect(queue.claim({ workerId: 'w' })).rejects.toMatchObject({ code: 'invalid_config' });
      expect((await queue.stats()).depth).toBe(0);
    } finally {
      await dispose();
    }
  });
});

describe('a signed BullMQ queue (real redis-server)', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('refuses a job hash copied under a new id with data.repo changed, also when the ack fetches it next', async () => {
    const name = `q-${randomUUID()}`;
    const inner = new BullmqQueue({
      backend: 'bullmq',
      url: redis.url,
      prefix: 'signed',
      name,
      leaseMs: 5_000,
      maxAttempts: 3,
      pollMs: 20,
    });
    const { queue, refused } = signed(inner, name);
    const client = new Redis(redis.url);
    try {
      const first = sampleJob();
      const second = sampleJob();
      await queue.enqueue(first);
      const lease = await queue.claim({ workerId: 'w', waitMs: 2_000 });
      expect(lease?.job).toEqual(first);
      // The attack: the claimed job's hash copied under a new id, its repository changed, pushed on the wait list.
      const key = (id: string) => `signed:${name}:${id}`;
      // The job's hash: other keys can end with its id too (a deduplication string key).
      const candidates = await client.keys(`signed:${name}:*${first.id}`);
      const types = await Promise.all(candidates.map((candidate) => client.type(candidate)));
      const bullId = candidates.find((_, i) => types[i] === 'hash');
      const hash = await client.hgetall(bullId!);
      const data = JSON.parse(hash.data!) as Record<string, unknown>;
      await client.hset(key('forged'), {
        ...hash,
        data: JSON.stringify({ ...data, id: 'forged', repo: 'victim/other' }),
        ats: '0',
        atm: '0',
      });
      await client.hdel(key('forged'), 'processedOn', 'lock', 'finishedOn');
      await client.lpush(`signed:${name}:wait`, 'forged');
      await queue.enqueue(second);
      // The ack's fetch-next takes the forged job first: refused, so the slot claims again.
      expect(await lease!.ackAndClaim!()).toBeUndefined();
      const next = await queue.claim({ workerId: 'w', waitMs: 2_000 });
      expect(next?.job).toEqual(second);
      await next!.ack();
      expect(refused.map((r) => [r.jobId, r.why])).toEqual([['forged', 'bad_signature']]);
      expect((await queue.deadLetters()).map((d) => [d.id, d.reason.split(' ')[0], d.job])).toEqual([
        ['forged', 'job_unsigned', undefined],
      ]);
    } finally {
      client.disconnect();
      await queue.close();
    }
  });
});
