import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { advance, createJob, newRun, startAttempt, type RunRecord } from '@codefleet/core';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { SqliteRunStore } from '../src/index.js';

const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
const job = (n: number) => createJob(
  { repo: '/srv/repos/widgets', source: { kind: 'cli' }, title: `task ${n}`, body: '', requested_by: 'me' },
  { id: `job-${n}`, now: t(n) },
);

describe('SqliteRunStore', () => {
  let dir: TempDir;
  let store: SqliteRunStore;
  beforeEach(async () => {
    dir = await createTempDir('store');
    store = new SqliteRunStore(join(dir.path, 'sub', 'runs.sqlite'));
  });
  afterEach(async () => {
    await store.close();
    await dir.dispose();
  });

  it('round-trips a run record and lists newest first', async () => {
    const a = newRun(job(1), { runId: 'job-1', now: t(1) });
    const b = advance(startAttempt(newRun(job(2), { runId: 'job-2', now: t(2) }), { workerId: 'w', now: t(3) }), 'preparing', { now: t(3) });
    await store.save(a);
    await store.save(b);
    expect(await store.get('job-2')).toEqual(b);
    expect(await store.get('nope')).toBeUndefined();
    const list = await store.list();
    expect(list.map((r) => [r.runId, r.stage, r.attempts])).toEqual([['job-2', 'preparing', 1], ['job-1', 'queued', 0]]);
  });

  it('ignores a late write of an older version of the same run', async () => {
    const v1 = startAttempt(newRun(job(1), { runId: 'job-1', now: t(1) }), { workerId: 'stale', now: t(2) });
    const v2: RunRecord = advance(v1, 'preparing', { now: t(5) });
    await store.save(v2);
    await store.save(v1);
    expect((await store.get('job-1'))?.stage).toBe('preparing');
  });

  it('a second store on the same file sees the writes (another process on the host)', async () => {
    const other = new SqliteRunStore(join(dir.path, 'sub', 'runs.sqlite'));
    try {
      await store.save(newRun(job(1), { runId: 'job-1', now: t(1) }));
      expect((await other.get('job-1'))?.job.title).toBe('task 1');
    } finally {
      await other.close();
    }
  });
});
