import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execa } from 'execa';
import { startFauxqs } from 'fauxqs';
import {
  createTempDir,
  gitTestEnv,
  startCountingProxy,
  startRedis,
  testFleetKeyEnv,
  waitFor,
  type CountingProxy,
  type RedisServer,
  type TempDir,
} from '@codefleet/testkit';
import { bin } from './cli-helpers.js';

// SQS bills every request. An idle worker slot should wait at SQS (a long poll of
// queue.sqs.wait_time_seconds), not ask again every second: the real worker binary on the
// SQS emulator, its requests counted by a loopback proxy.
describe('an idle worker on SQS', () => {
  let dir: TempDir;
  let redis: RedisServer;
  let sqs: Awaited<ReturnType<typeof startFauxqs>>;
  let proxy: CountingProxy;
  beforeAll(async () => {
    dir = await createTempDir('cli-sqs-idle');
    redis = await startRedis();
    sqs = await startFauxqs({ port: 0, logger: false });
    proxy = await startCountingProxy(sqs.address);
  });
  afterAll(async () => {
    await proxy.close();
    await sqs.stop();
    await redis.stop();
    await dir.dispose();
  });

  it('long-polls: one receive per slot in flight, not one a second', async () => {
    const queueUrl = sqs.createQueue('idle').queueUrl;
    await writeFile(
      join(dir.path, 'config.yaml'),
      [
        'data_dir: ./data',
        'queue:',
        '  backend: sqs',
        '  name: idle',
        '  sqs:',
        `    queue_url: ${queueUrl}`,
        `    endpoint: ${proxy.url}`,
        '    region: us-east-1',
        '    wait_time_seconds: 20',
        `    coordination_url: ${redis.url}`,
        'store:',
        '  backend: redis',
        `  redis_url: ${redis.url}`,
        '  prefix: idle',
        'agents:',
        '  default: command',
        '  command:',
        '    argv: ["true"]',
        '',
      ].join('\n'),
    );
    const worker = execa(
      process.execPath,
      [bin, '--config', join(dir.path, 'config.yaml'), '--log-format', 'json', 'worker', '--concurrency', '2'],
      {
        cwd: dir.path,
        extendEnv: false,
        reject: false,
        env: {
          PATH: process.env.PATH,
          HOME: dir.path,
          ...gitTestEnv(),
          ...testFleetKeyEnv(),
          AWS_ACCESS_KEY_ID: 'emulator',
          AWS_SECRET_ACCESS_KEY: 'emulator',
        },
      },
    );
    try {
      // Both slots have asked once; from then on each waits at SQS for up to 20 s.
      await waitFor(() => (proxy.counts().ReceiveMessage ?? 0) >= 2);
      const settled = proxy.counts().ReceiveMessage ?? 0;
      // Five seconds idle: polling every second would make ~10 more receives (2 slots). A
      // slow machine makes fewer, never more, so this cannot fail for being loaded.
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      expect((proxy.counts().ReceiveMessage ?? 0) - settled).toBeLessThanOrEqual(2);
    } finally {
      worker.kill('SIGTERM');
      const ended = await worker;
      // The long poll is cut short by the drain: the worker stops, cleanly.
      expect({ code: ended.exitCode, signal: ended.signal }).toEqual({ code: 0, signal: undefined });
    }
  });
});
