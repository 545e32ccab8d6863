import { closeSync, openSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { classify } from '@codefleet/core';
import { openSqlite } from '@codefleet/sqlite';
import { createTempDir, sampleJob, type TempDir } from '@codefleet/testkit';
import { LocalQueue, openQueue, type LocalQueueSettings } from '../src/index.js';

// A damaged queue file is loud: real queue files truncated or with a page overwritten,
// then opened and used as a worker and the CLI would.

/** Overwrites page `page` (1-based) of a closed database file with garbage. */
function overwritePage(path: string, page: number, pageSize: number): void {
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, Buffer.alloc(pageSize, 0xab), 0, pageSize, (page - 1) * pageSize);
  } finally {
    closeSync(fd);
  }
}

/** The rejection of `promise`, classified as the worker and the CLI see it, with the error's details. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return { ...classify(error), details: (error as { details?: unknown }).details };
  }
  return 'resolved';
}

describe('a damaged local queue file', () => {
  let dir: TempDir;
  let settings: LocalQueueSettings;
  beforeEach(async () => {
    dir = await createTempDir('queue-damage');
    settings = {
      backend: 'local',
      path: join(dir.path, 'queue.sqlite'),
      name: 'default',
      leaseMs: 5_000,
      maxAttempts: 3,
    };
  });
  afterEach(async () => {
    await dir.dispose();
  });

  /** A closed queue file holding `n` queued jobs. */
  const queued = async (n: number) => {
    const queue = new LocalQueue(settings);
    for (let i = 0; i < n; i += 1) await queue.enqueue(sampleJob());
    expect((await queue.stats()).ready).toBe(n);
    await queue.close();
  };

  /** Root page of a table or index of the closed queue file, and the page size. */
  const pageOf = (name: string) => {
    const db = openSqlite(settings.path, { readonly: true });
    const { rootpage } = db.prepare('SELECT rootpage FROM sqlite_master WHERE name = ?').get(name) as {
      rootpage: number;
    };
    const pageSize = Number(Object.values(db.prepare('PRAGMA page_size').get() as object)[0]);
    db.close();
    return { page: Number(rootpage), pageSize };
  };

  it('truncated to 0 bytes: opening fails, permanent, naming the file and the fix; not a new empty queue', async () => {
    await queued(3);
    truncateSync(settings.path, 0);
    expect(await rejection(openQueue(settings))).toEqual({
      code: 'queue_unavailable',
      verdict: 'permanent',
      message: expect.stringMatching(
        new RegExp(
          `^the local queue ${settings.path} is empty \\(0 bytes\\): it was truncated.*; fix: stop the workers; restore ${settings.path} from a backup, or move ${settings.path} and its -wal and -shm files aside`,
        ),
      ),
      details: expect.objectContaining({
        path: settings.path,
        damage: 'empty',
        fix: expect.stringContaining('enqueue its jobs again'),
      }),
    });
  });

  it('a brand-new queue (no file yet) opens empty, created whole', async () => {
    const queue = await openQueue(settings);
    expect((await queue.stats()).depth).toBe(0);
    await queue.checkStorage?.();
    await queue.close();
  });

  it('a page of the jobs table overwritten: claim fails permanently with the fix instead of a retryable SQLite error', async () => {
    await queued(3);
    const { page, pageSize } = pageOf('jobs');
    overwritePage(settings.path, page, pageSize);
    const queue = new LocalQueue(settings);
    try {
      const damaged = {
        code: 'queue_unavailable',
        verdict: 'permanent',
        message: expect.stringMatching(
          new RegExp(
            `^the local queue ${settings.path} is damaged: database disk image is malformed; fix: stop the workers, then recover what it holds: \`sqlite3 ${settings.path} \\.recover`,
          ),
        ),
        details: expect.objectContaining({ path: settings.path, damage: 'corrupt' }),
      };
      expect(await rejection(queue.claim({ workerId: 'w' }))).toEqual(damaged);
      // The same again: nothing a retry mends.
      expect(await rejection(queue.claim({ workerId: 'w' }))).toEqual(damaged);
      expect(await rejection(queue.enqueue(sampleJob()))).toEqual(damaged);
      // The dead-letter listing reads only the index of states, which is intact, so it
      // answers "none": the check is what tells a listing that the file is damaged.
      expect(await queue.deadLetters()).toEqual([]);
      expect(await rejection(queue.checkStorage())).toEqual({
        ...damaged,
        message: expect.stringMatching(new RegExp(`^the local queue ${settings.path} is damaged: `)),
      });
    } finally {
      await queue.close();
    }
  });

  it('an index page overwritten: every call still answers, and only the check finds it', async () => {
    await queued(3);
    const { page, pageSize } = pageOf('jobs_state');
    overwritePage(settings.path, page, pageSize);
    const queue = new LocalQueue(settings);
    try {
      expect(await rejection(queue.checkStorage())).toMatchObject({
        code: 'queue_unavailable',
        verdict: 'permanent',
        details: { damage: 'corrupt' },
      });
    } finally {
      await queue.close();
    }
  });

  it('a healthy file passes the check', async () => {
    await queued(3);
    const queue = new LocalQueue(settings);
    await expect(queue.checkStorage()).resolves.toBeUndefined();
    expect((await queue.stats()).ready).toBe(3);
    await queue.close();
  });

  it("another program's SQLite file is not taken for an empty queue", async () => {
    const other = openSqlite(settings.path);
    other.exec('CREATE TABLE runs (id TEXT)');
    other.close();
    expect(await rejection(openQueue(settings))).toMatchObject({
      code: 'queue_unavailable',
      verdict: 'permanent',
      message: expect.stringContaining(`${settings.path} is a SQLite database without the jobs table`),
      details: { damage: 'wrong_schema', fix: expect.stringContaining("set queue.local.path to the queue's file") },
    });
  });
});
