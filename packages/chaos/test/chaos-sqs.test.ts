import { describe, it } from '@jest/globals';
import { expectCleanRun } from './full-run.js';

describe('chaos run (CI size) on SQS', () => {
  it('30 jobs, 4 workers: nothing lost, unexpected, duplicated or orphaned', async () => {
    await expectCleanRun('sqs');
  }, 1_200_000);
});
