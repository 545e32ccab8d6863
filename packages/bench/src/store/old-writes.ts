/**
 * Histories written fast, as the version before the run indexes wrote them (one transaction,
 * one pipeline): the store's first open (SQLite) or first read (Redis) indexes them. The store
 * benches load their 100,000 runs this way; saving each through the store would take minutes.
 */
import { Redis } from 'ioredis';
import type { RunRecord } from '@codefleet/core';
import { openSqlite } from '@codefleet/sqlite';

/** What the version before the run indexes wrote: the record, its version, its times, one index. */
export function writeOldSqlite(path: string, runs: readonly RunRecord[]): void {
  const db = openSqlite(path);
  try {
    db.exec(`CREATE TABLE runs (run_id TEXT PRIMARY KEY, updated_at TEXT NOT NULL, created_at TEXT NOT NULL, version TEXT NOT NULL, record TEXT NOT NULL);
      CREATE INDEX runs_created ON runs (created_at DESC);`);
    const insert = db.prepare('INSERT INTO runs VALUES (?, ?, ?, ?, ?)');
    db.transaction(() => {
      for (const run of runs)
        insert.run(run.run_id, run.updated_at, run.created_at, `000001.000010.${run.updated_at}`, JSON.stringify(run));
    }).immediate();
  } finally {
    db.close();
  }
}

/** What the version before the run indexes wrote to Redis, at the least: each record and the set of every run. */
export async function writeOldRedis(url: string, prefix: string, runs: readonly RunRecord[]): Promise<void> {
  const raw = new Redis(url);
  try {
    for (let i = 0; i < runs.length; i += 1_000) {
      const batch = raw.pipeline();
      for (const run of runs.slice(i, i + 1_000)) {
        batch.hset(
          `${prefix}:runs:run:${run.run_id}`,
          'version',
          `000001.000010.${run.updated_at}`,
          'record',
          JSON.stringify(run),
        );
        batch.zadd(`${prefix}:runs:by-created`, Date.parse(run.created_at), run.run_id);
      }
      await batch.exec();
    }
  } finally {
    raw.disconnect();
  }
}
