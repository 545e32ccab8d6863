import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startFauxqs } from 'fauxqs';
import { FLEET_ACL_RULES, type RedisServer, sampleJob, startRedis } from '@codefleet/testkit';
import { BullmqQueue } from '../src/bullmq/bullmq-queue.js';
import { queueConformance } from './conformance/index.js';
import type { BullmqQueueSettings, SqsQueueSettings } from '../src/index.js';
import { SqsQueue } from '../src/sqs/sqs-queue.js';

// Redis deployed closed: a real redis-server whose default user has a password and whose
// fleet user has only the README's ACL. The whole conformance suite runs through that user,
// and a connection without the password, or with a wrong one, is refused at once with an
// error naming the setting to fix.
const adminPassword = 'admin-5c1e0d2b7a94';
const fleetPassword = 'fleet-8e3f6a1c2d07';
let redis: RedisServer;
let sqs: Awaited<ReturnType<typeof startFauxqs>>;
beforeAll(async () => {
  redis = await startRedis({
    password: adminPassword,
    users: { codefleet: `on >${fleetPassword} ${FLEET_ACL_RULES}`, reader: `on >${fleetPassword} ~codefleet:* +get` },
  });
  sqs = await startFauxqs({ port: 0, logger: false });
});
afterAll(async () => {
  await redis?.stop();
  await sqs?.stop();
});

const fleetUrl = () => redis.urlAs('codefleet', fleetPassword);
const settingsFor = (url: string, leaseMs = 1_000, maxAttempts = 4): BullmqQueueSettings => ({
  backend: 'bullmq',
  url,
  prefix: 'codefleet',
  name: `q-${randomUUID()}`,
  leaseMs,
  maxAttempts,
  pollMs: 20,
  connectTimeoutMs: 10_000,
});

queueConformance({
  name: 'bullmq through the fleet ACL user',
  leaseMs: 1_000,
  capabilities: { priority: true },
  open: async ({ leaseMs, maxAttempts, ...scheduling }) => {
    const settings = { ...settingsFor(fleetUrl(), leaseMs, maxAttempts), ...scheduling };
    const queue = new BullmqQueue(settings);
    return { queue, settings, injectRaw: (payload) => queue.injectRaw(payload), dispose: () => queue.close() };
  },
});

describe('a Redis that refuses the connection', () => {
  const refusals = () => [
    { url: `redis://127.0.0.1:${redis.port}`, code: 'NOAUTH', fix: 'put the user and password in' },
    { url: redis.urlAs('codefleet', 'not-the-password'), code: 'WRONGPASS', fix: 'check the user and password in' },
    { url: redis.urlAs('reader', fleetPassword), code: 'NOPERM', fix: 'give the ACL user the commands and keys' },
  ];

  it('BullMQ: enqueue and claim reject at once, naming queue.bullmq.url, never the password', async () => {
    for (const { url, code, fix } of refusals()) {
      // connectTimeoutMs is far longer than the test waits: the refusal, not a timeout, answers.
      const queue = new BullmqQueue(settingsFor(url));
      try {
        const enqueued = await queue.enqueue(sampleJob({})).catch((e: unknown) => e);
        expect([code, enqueued]).toEqual([
          code,
          expect.objectContaining({ code: 'queue_unavailable', verdict: 'permanent' }),
        ]);
        expect((enqueued as Error).message).toMatch(
          new RegExp(`^Redis at 127\\.0\\.0\\.1:${redis.port} .*${fix}.* queue\\.bullmq\\.url \\(${code}\\)$`),
        );
        expect((enqueued as Error).message).not.toContain('not-the-password');
        const claimed = await queue.claim({ workerId: 'w', waitMs: 60_000 }).catch((e: unknown) => e);
        expect([code, claimed]).toEqual([
          code,
          expect.objectContaining({
            code: 'queue_unavailable',
            message: expect.stringContaining(`queue.bullmq.url (${code})`),
          }),
        ]);
      } finally {
        await queue.close();
      }
    }
  });

  it('SQS: the coordination store refuses enqueue and claim, naming queue.sqs.coordination_url', async () => {
    const { queueUrl } = sqs.createQueue(`q-${randomUUID()}`);
    const base: Omit<SqsQueueSettings, 'coordinationUrl'> = {
      backend: 'sqs',
      queueUrl,
      region: 'us-east-1',
      endpoint: sqs.address,
      credentials: { accessKeyId: 'emulator', secretAccessKey: 'emulator' },
      prefix: 'codefleet',
      name: 'q',
      leaseMs: 1_000,
      maxAttempts: 3,
      waitTimeSeconds: 0,
      pollMs: 50,
    };
    const open = new SqsQueue({ ...base, coordinationUrl: `redis://127.0.0.1:${redis.port}` });
    try {
      await expect(open.enqueue(sampleJob({}))).rejects.toMatchObject({
        code: 'queue_unavailable',
        message: expect.stringContaining('queue.sqs.coordination_url (NOAUTH)'),
      });
    } finally {
      await open.close();
    }
    // Through the fleet user: a job goes round.
    const closed = new SqsQueue({ ...base, coordinationUrl: fleetUrl() });
    try {
      const job = sampleJob({});
      expect(await closed.enqueue(job)).toEqual({ id: job.id, deduplicated: false });
      const lease = await closed.claim({ workerId: 'w', waitMs: 5_000 });
      expect(lease?.job.id).toBe(job.id);
      await lease!.ack();
      expect(await closed.stats()).toMatchObject({ completed: 1 });
    } finally {
      await closed.close();
    }
  });
});
