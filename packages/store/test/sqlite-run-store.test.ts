import { rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { openSqlite } from '@codefleet/sqlite';
import { describe, expect, it } from '@jest/globals';
import { advance, newRun, startAttempt, type RunRecord } from '@codefleet/core';
import { createTempDir } from '@codefleet/testkit';
import { SqliteRunStore, type RequestKey, type RunIndexEvent } from '../src/index.js';

// The store's own contract holds for any key string it is given; packages make theirs with
// requestKeyFamily.
const key = (text: string) => text as RequestKey;
import { job, runStoreContract } from './contract.js';
import { fleetContract } from './contract-fleet.js';
import { pagesContract, type OldStore } from './contract-pages.js';
import { spendContract } from './contract-spend.js';
import { retentionContract } from './contract-retention.js';
import { runWriter } from '../src/sqlite-run-index.js';
import { runVersion } from '../src/version.js';

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

pagesContract(
  'sqlite',
  async () => {
    const dir = await createTempDir('store');
    const path = join(dir.path, 'runs.sqlite');
    // Thousands of runs as save writes them, in one transaction instead of one each.
    const fill = async (runs: readonly RunRecord[]) => {
      const db = openSqlite(path);
      try {
        const save = runWriter(db);
        db.transaction(() => runs.forEach(save)).immediate();
      } finally {
        db.close();
      }
    };
    return { store: new SqliteRunStore(path), fill, dispose: () => dir.dispose() };
  },
  async (old) => {
    const dir = await createTempDir('store');
    const path = join(dir.path, 'runs.sqlite');
    writeSchema1(path, old);
    return { store: new SqliteRunStore(path), dispose: () => dir.dispose() };
  },
);

/** What the version before the run indexes made: schema 1, the record and its times only. */
function writeSchema1(path: string, old: OldStore): void {
  const db = openSqlite(path);
  try {
    db.exec(`CREATE TABLE runs (run_id TEXT PRIMARY KEY, updated_at TEXT NOT NULL, created_at TEXT NOT NULL,
      version TEXT NOT NULL, record TEXT NOT NULL);
      CREATE INDEX runs_created ON runs (created_at DESC);`);
    const insert = db.prepare(
      'INSERT INTO runs (run_id, updated_at, created_at, version, record) VALUES (?, ?, ?, ?, ?)',
    );
    for (const run of old.runs)
      insert.run(run.run_id, run.updated_at, run.created_at, runVersion(run), JSON.stringify(run));
    const { runId, createdAt } = old.notJson;
    insert.run(runId, createdAt, createdAt, '000000', '{"run_id": "half a rec');
  } finally {
    db.close();
  }
}

retentionContract('sqlite', async () => {
  const dir = await createTempDir('store');
  return { store: new SqliteRunStore(join(dir.path, 'runs.sqlite')), dispose: () => dir.dispose() };
});

spendContract('sqlite, two handles on one file', async () => {
  const dir = await createTempDir('store');
  const path = join(dir.path, 'runs.sqlite');
  return { stores: [new SqliteRunStore(path), new SqliteRunStore(path)], dispose: () => dir.dispose() };
});

describe('SqliteRunStore', () => {
  it('migrates a file from before the run indexes once, at open, and says how long it took', async () => {
    const dir = await createTempDir('store');
    const path = join(dir.path, 'runs.sqlite');
    const events: RunIndexEvent[] = [];
    try {
      const runs = [1, 2, 3].map((n) => newRun(job(n), { runId: `job-${n}`, now: new Date(Date.UTC(2026, 0, n)) }));
      writeSchema1(path, { runs, notJson: { runId: 'job-4', createdAt: new Date().toISOString() } });
      await new SqliteRunStore(path, { onIndexMigration: (event) => events.push(event) }).close();
      expect(events).toEqual([
        { event: 'started', store: 'sqlite', schema: 2 },
        { event: 'finished', store: 'sqlite', schema: 2, runs: 4, durationMs: expect.any(Number) },
      ]);
      const store = new SqliteRunStore(path, { onIndexMigration: (event) => events.push(event) });
      expect((await store.page({ state: 'queued' })).total).toBe(3);
      await store.close();
      expect(events).toHaveLength(2);
      const db = openSqlite(path);
      try {
        expect(db.prepare('PRAGMA user_version').get()).toEqual({ user_version: 2 });
        expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'runs_created'").all()).toEqual([]);
      } finally {
        db.close();
      }
    } finally {
      await dir.dispose();
    }
  });

  it('recomputes the facets of a run an older writer saved after the migration, at the next read', async () => {
    const dir = await createTempDir('store');
    const path = join(dir.path, 'runs.sqlite');
    const store = new SqliteRunStore(path);
    const db = openSqlite(path);
    try {
      const queued = newRun(job(1), { runId: 'job-1', now: new Date() });
      await store.save(queued);
      // The version before this one updates the record and leaves the columns it does not know.
      const started = advance(startAttempt(queued, { workerId: 'w', now: new Date() }), 'preparing', {
        now: new Date(),
      });
      db.prepare('UPDATE runs SET version = ?, record = ? WHERE run_id = ?').run(
        runVersion(started),
        JSON.stringify(started),
        'job-1',
      );
      db.prepare('INSERT INTO runs (run_id, updated_at, created_at, version, record) VALUES (?, ?, ?, ?, ?)').run(
        'job-2',
        queued.created_at,
        queued.created_at,
        runVersion(queued),
        JSON.stringify({ ...queued, run_id: 'job-2' }),
      );
      expect((await store.list({ state: 'preparing' })).map((r) => r.runId)).toEqual(['job-1']);
      expect((await store.page({ state: 'queued' })).total).toBe(1);
    } finally {
      db.close();
      await store.close();
      await dir.dispose();
    }
  });

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
