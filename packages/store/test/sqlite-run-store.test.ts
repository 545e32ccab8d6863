import { rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { openSqlite } from '@codefleet/sqlite';
import { describe, expect, it } from '@jest/globals';
import { newRun } from '@codefleet/core';
import { createTempDir } from '@codefleet/testkit';
import { SqliteRunStore, type RequestKey } from '../src/index.js';

// The store's own contract holds for any key string it is given; packages make theirs with
// requestKeyFamily.
const key = (text: string) => text as RequestKey;
import { job, runStoreContract } from './contract.js';
import { fleetContract } from './contract-fleet.js';
import { spendContract } from './contract-spend.js';

runStoreContract('sqlite', async () => {
  const dir = await createTempDir('store');
  return { store: new SqliteRunStore(join(dir.path, 'sub', 'runs.sqlite')), dispose: () => dir.dispose() };
});

fleetContract('sqlite', async (options) => {
  const dir = await createTempDir('store');
  const path = join(dir.path, 'runs.sqlite');
  const corrupt = async (runId: string, text: string) => {
    const db = openSqlite(path);
    try {
      db.prepare('UPDATE runs SET record = ? WHERE run_id = ?').run(text, runId);
    } finally {
      db.close();
    }
  };
  return { store: new SqliteRunStore(path, options), corrupt, dispose: () => dir.dispose() };
});

spendContract('sqlite, two handles on one file', async () => {
  const dir = await createTempDir('store');
  const path = join(dir.path, 'runs.sqlite');
  return { stores: [new SqliteRunStore(path), new SqliteRunStore(path)], dispose: () => dir.dispose() };
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

  it('deletes expired request keys from the file, as Redis does by their TTL', async () => {
    const dir = await createTempDir('store');
    const path = join(dir.path, 'runs.sqlite');
    const store = new SqliteRunStore(path);
    // A second handle sweeps on its first write; the first one already swept on its own.
    await store.setRequest(key('chat:slack:C1:1:1'), 'job-1', 0);
    await store.setRequest(key('api:kept'), 'job-2', 60_000);
    const other = new SqliteRunStore(path);
    const db = openSqlite(path);
    try {
      await other.bindRequest(key('retry:run-1'), 'job-3', 60_000);
      const keys = db.prepare('SELECT key FROM request_keys ORDER BY key').all() as { key: string }[];
      expect(keys.map((k) => k.key)).toEqual(['api:kept', 'retry:run-1']);
    } finally {
      db.close();
      await other.close();
      await store.close();
      await dir.dispose();
    }
  });

  it('a run store file truncated to 0 bytes, or not a run store, is refused naming the file and the fix, never read as empty', async () => {
    const dir = await createTempDir('store');
    try {
      const path = join(dir.path, 'runs.sqlite');
      const store = new SqliteRunStore(path);
      await store.save(newRun(job(1), { runId: 'job-1', now: new Date() }));
      await store.close();
      await truncate(path, 0);
      await rm(`${path}-wal`, { force: true });
      expect(() => new SqliteRunStore(path)).toThrow(
        expect.objectContaining({
          code: 'store_unavailable',
          verdict: 'permanent',
          message: expect.stringContaining(path),
        }),
      );
      const other = join(dir.path, 'other.sqlite');
      const foreign = openSqlite(other);
      foreign.exec('CREATE TABLE notes (x TEXT)');
      foreign.close();
      expect(() => new SqliteRunStore(other)).toThrow(/run store .*fix: /);
    } finally {
      await dir.dispose();
    }
  });
});
