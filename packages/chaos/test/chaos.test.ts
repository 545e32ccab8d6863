import { describe, expect, it } from '@jest/globals';
import { expectCleanRun } from './full-run.js';

// One engine per file, so that jest runs them side by side (the SQS run is chaos-sqs.test.ts).
describe('chaos run (CI size) on BullMQ', () => {
  it('30 jobs, 4 workers, Redis SIGKILLed mid-run: nothing lost, unexpected, duplicated or orphaned', async () => {
    const lines = await expectCleanRun('bullmq');
    expect(lines.some((line) => line.includes('SIGKILL redis-server'))).toBe(true);
  }, 1_200_000);
});
