import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '../src/index.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('the repository config.yaml', () => {
  const options = { baseDir: ROOT, hostname: 'sample-host' };

  it('parses without problems in an empty environment', async () => {
    const text = await readFile(`${ROOT}config.yaml`, 'utf8');
    expect(() => parseConfig(text, { ...options, env: {} })).not.toThrow();
  });

  it('writes out exactly the built-in defaults', async () => {
    const text = await readFile(`${ROOT}config.yaml`, 'utf8');
    expect(parseConfig(text, { ...options, env: {} }).config).toEqual(parseConfig('', { ...options, env: {} }).config);
  });

  it('takes the usual overrides from the environment', async () => {
    const text = await readFile(`${ROOT}config.yaml`, 'utf8');
    const env = {
      CODEFLEET_QUEUE_BACKEND: 'sqs',
      SQS_QUEUE_URL: 'https://sqs.ap-northeast-1.amazonaws.com/123456789012/codefleet',
      SQS_WAIT_TIME_SECONDS: '10',
      CODEFLEET_WORKER_ID: 'mbp-m4-001',
      CODEFLEET_CONCURRENCY: '2',
      CODEFLEET_FORGE: 'github',
      GITHUB_TOKEN: 'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
    };
    const { config } = parseConfig(text, { ...options, env });
    expect(config.queue.backend).toBe('sqs');
    expect(config.queue.sqs.wait_time_seconds).toBe(10);
    expect(config.worker).toMatchObject({ worker_id: 'mbp-m4-001', concurrency: 2 });
    expect(config.forge.github.token).toBe(env.GITHUB_TOKEN);
  });
});
