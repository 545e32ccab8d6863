import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { newRun } from '@codefleet/core';
import { createTempDir } from '@codefleet/testkit';
import { SqliteRunStore } from '../src/index.js';
import { job, runStoreContract } from './contract.js';

runStoreContract('sqlite', async () => {
  const dir = await createTempDir('store');
  return { store: new SqliteRunStore(join(dir.path, 'sub', 'runs.sqlite')), dispose: () => dir.dispose() };
});

describe('SqliteRunStore', () => {
  it('a second store on the same file sees the writes and the leases (another process on the host)', async () => {
    const dir = await createTempDir('store');
    const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
    const other = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
    try {
      await store.save(newRun(job(1), { runId: 'job-1', now: new Date() }));
      expect((await other.get('job-1'))?.job.title).toBe('task 1');
      expect(await store.acquire('k', 'a', 60_000)).toBe(true);
      expect(await other.acquire('k', 'b', 60_000)).toBe(false);
    } finally {
      await other.close();
      await store.close();
      await dir.dispose();
    }
  });
});
