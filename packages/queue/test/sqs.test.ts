import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startFauxqs } from 'fauxqs';
import { type RedisServer, sampleJob, startRedis } from '@codefleet/testkit';
import { queueConformance } from './conformance/index.js';
import type { SqsQueueSettings } from '../src/index.js';
import { maxMessageBytes, SqsQueue } from '../src/sqs/sqs-queue.js';

// The fauxqs SQS emulator in-process on a random loopback port (a stand-in for AWS,
// speaking SQS's wire protocol to the real AWS SDK client), and a real redis-server for
// the coordination store. Each test gets its own queue and key namespace.
let sqs: Awaited<ReturnType<typeof startFauxqs>>;
let redis: RedisServer;
beforeAll(async () => {
  sqs = await startFauxqs({ port: 0, logger: false });
  redis = await startRedis();
});
afterAll(async () => {
  await sqs?.stop();
  await redis?.stop();
});

const settingsFor = (leaseMs: number, maxAttempts: number, fifo = false): SqsQueueSettings => {
  const name = `q-${randomUUID()}${fifo ? '.fifo' : ''}`;
  const { queueUrl } = sqs.createQueue(name, fifo ? { attributes: { FifoQueue: 'true' } } : {});
  // High-priority jobs have a queue of their own (SQS has no priority).
  const { queueUrl: priorityQueueUrl } = sqs.createQueue(`p${name}`, fifo ? { attributes: { FifoQueue: 'true' } } : {});
  return {
    priorityQueueUrl,
    backend: 'sqs',
    queueUrl,
    region: 'us-east-1',
    endpoint: sqs.address,
    credentials: { accessKeyId: 'emulator', secretAccessKey: 'emulator' },
    coordinationUrl: redis.url,
    prefix: 'cf-test',
    name: name.replace('.fifo', ''),
    leaseMs,
    maxAttempts,
    waitTimeSeconds: 1,
    pollMs: 50,
    ...(fifo ? { fifo } : {}),
  };
};

queueConformance({
  name: 'sqs (fauxqs emulator + real redis-server)',
  leaseMs: 1_000,
  open: async ({ leaseMs, maxAttempts, ...scheduling }) => {
    const settings = { ...settingsFor(leaseMs, maxAttempts), ...scheduling };
    const queue = new SqsQueue(settings);
    return { queue, settings, injectRaw: (payload) => queue.injectRaw(payload), dispose: () => queue.close() };
  },
});

describe('SqsQueue specifics', () => {
  it('refuses a job too large for one message with payload_too_large, naming the limit', async () => {
    const queue = new SqsQueue(settingsFor(1_000, 2));
    try {
      const error = await queue.enqueue(sampleJob({ patch: 'x'.repeat(maxMessageBytes + 1) })).catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: 'payload_too_large',
        verdict: 'permanent',
        message: expect.stringContaining(String(maxMessageBytes)),
      });
      expect((await queue.stats()).depth).toBe(0);
    } finally {
      await queue.close();
    }
  });

  it('FIFO: a message group per repository, deduplicated by job id', async () => {
    const queue = new SqsQueue(settingsFor(1_000, 2, true));
    try {
      const job = sampleJob({ repo: 'acme/widgets' });
      expect(await queue.enqueue(job)).toEqual({ id: job.id, deduplicated: false });
      const lease = await queue.claim({ workerId: 'w', waitMs: 3_000 });
      expect(lease?.job).toEqual(job);
      await lease!.ack();
      expect((await queue.stats()).completed).toBe(1);
    } finally {
      await queue.close();
    }
  });

  it('the redrive policy backstop: a message moved to the SQS dead-letter queue is listed and redriven', async () => {
    const name = `q-${randomUUID()}`;
    const dlq = sqs.createQueue(`${name}-dlq`);
    const { queueUrl } = sqs.createQueue(name, {
      attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.queueArn, maxReceiveCount: '1' }) },
    });
    const queue = new SqsQueue({ ...settingsFor(1_000, 5), queueUrl, name, deadLetterQueueUrl: dlq.queueUrl });
    try {
      const job = sampleJob();
      await queue.enqueue(job);
      // A worker takes it and dies; SQS moves it on the next receive (count 2 > 1).
      expect((await queue.claim({ workerId: 'doomed', waitMs: 3_000 }))?.job.id).toBe(job.id);
      expect(await queue.claim({ workerId: 'w', waitMs: 2_500 })).toBeUndefined();
      const dead = await queue.deadLetters();
      expect(dead).toEqual([
        expect.objectContaining({ id: job.id, job, reason: expect.stringMatching(/redrive policy/) }),
      ]);
      expect((await queue.stats()).deadLetter).toBe(1);

      expect(await queue.redrive('msg-nope')).toEqual({ status: 'not_found' });
      expect(await queue.redrive(job.id)).toEqual({ status: 'redriven', id: job.id });
      const again = await queue.claim({ workerId: 'w', waitMs: 3_000 });
      expect(again?.job).toEqual(job);
      expect(again?.attempt).toBe(1);
      await again!.ack();
      expect(await queue.deadLetters()).toEqual([]);
      expect(await queue.stats()).toMatchObject({ deadLetter: 0, completed: 1 });
    } finally {
      await queue.close();
    }
  });

  it('the redrive policy backstop: a message moved to the SQS dead-letter queue can be dropped', async () => {
    const name = `q-${randomUUID()}`;
    const dlq = sqs.createQueue(`${name}-dlq`);
    const { queueUrl } = sqs.createQueue(name, {
      attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.queueArn, maxReceiveCount: '1' }) },
    });
    const queue = new SqsQueue({ ...settingsFor(1_000, 5), queueUrl, name, deadLetterQueueUrl: dlq.queueUrl });
    try {
      const job = sampleJob();
      await queue.enqueue(job);
      expect((await queue.claim({ workerId: 'doomed', waitMs: 3_000 }))?.job.id).toBe(job.id);
      expect(await queue.claim({ workerId: 'w', waitMs: 2_500 })).toBeUndefined();
      expect((await queue.deadLetters()).map((d) => d.id)).toEqual([job.id]);
      expect(await queue.drop('msg-nope')).toEqual({ status: 'not_found' });
      expect(await queue.drop(job.id)).toEqual({ status: 'dropped', id: job.id });
      expect(await queue.deadLetters()).toEqual([]);
      expect((await queue.stats()).deadLetter).toBe(0);
      expect(await queue.claim({ workerId: 'w', waitMs: 1_500 })).toBeUndefined();
    } finally {
      await queue.close();
    }
  });

  it('refuses nonsense settings with a clear error', () => {
    expect(() => new SqsQueue({ ...settingsFor(1_000, 2), leaseMs: 500 })).toThrow(/leaseMs/);
    expect(() => new SqsQueue({ ...settingsFor(1_000, 0) })).toThrow(/maxAttempts/);
    expect(() => new SqsQueue({ ...settingsFor(1_000, 2), fifo: true })).toThrow(/\.fifo/);
  });
});
