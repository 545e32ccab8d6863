import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  advance,
  createJob,
  finish,
  newRun,
  setPublication,
  type Job,
  type RunRecord,
  type Stage,
} from '@codefleet/core';
import { LocalQueue } from '@codefleet/queue';
import { openSqlite } from '@codefleet/sqlite';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir, type TempDir } from '@codefleet/testkit';
import { branchName } from '@codefleet/workspace';
import { audit, failures, type LedgerEntry } from '../src/audit.js';

// The audit against a real queue, run store and forge database, with one job in each end
// state a chaos run can leave: what is still in the queue is unfinished, not lost.

const repo = '/srv/origin.git';
const now = new Date();

const job = (name: string): Job =>
  createJob(
    { repo, source: { kind: 'api' }, title: `chaos job ${name}`, body: 'Write the file.', requested_by: 'chaos' },
    { id: `chaos-${name}`, now },
  );

/** A run moved through `stages`, then ended with `outcome` when given. */
function runOf(of: Job, stages: Stage[], end?: { outcome: 'succeeded' | 'failed'; pr?: number }): RunRecord {
  let run = newRun(of, { runId: of.id, now });
  for (const stage of stages) run = advance(run, stage, { now });
  if (end?.pr !== undefined)
    run = setPublication(
      run,
      { branch: branchName(of), pullRequest: { number: end.pr, head: branchName(of), base: 'main', draft: false } },
      { now },
    );
  return end ? finish(run, end.outcome, { now }) : run;
}

describe('chaos audit', () => {
  let dir: TempDir;
  beforeEach(async () => {
    dir = await createTempDir('chaos-audit');
  });
  afterEach(async () => {
    await dir.dispose();
  });

  it('tells unfinished jobs (still queued or running) from lost ones (ended without a PR, or vanished)', async () => {
    const queue = new LocalQueue({
      backend: 'local',
      path: join(dir.path, 'queue.sqlite'),
      name: 'chaos',
      leaseMs: 200,
      // The audit holds what it claims by heartbeats; on a loaded machine a stall past this
      // short lease hands the job to its next claim, one more attempt each time. With few
      // attempts that alone dead-lettered `queued` and `running` (load 42: lost 5, not 3).
      maxAttempts: 1_000,
      pollMs: 20,
    });
    const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
    const forgeDb = join(dir.path, 'forge.sqlite');
    try {
      const [done, queued, running, dead, vanished, failed] = [
        'done',
        'queued',
        'running',
        'dead',
        'vanished',
        'failed',
      ].map(job) as [Job, Job, Job, Job, Job, Job];
      const ledger: LedgerEntry[] = [done, queued, running, dead, vanished, failed].map((j) => ({
        ev: 'enqueue',
        job: j.id,
        at: 1,
      }));
      // done: a succeeded run with its open pull request; the queue acked it.
      // failed: a run that ended failed; acked too.
      for (const j of [done, failed]) {
        await queue.enqueue(j);
        await (await queue.claim({ workerId: 'w' }))!.ack();
      }
      await store.save(
        runOf(done, ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'], {
          outcome: 'succeeded',
          pr: 1,
        }),
      );
      await store.save(runOf(failed, ['preparing'], { outcome: 'failed' }));
      // dead: dead-lettered with no run. Settled before `running` is claimed: that lease is
      // short, and once it ran out (a stall on a loaded machine is enough) a claim for `dead`
      // would be handed `running` again.
      await queue.enqueue(dead);
      const deadLease = await queue.claim({ workerId: 'w' });
      expect(deadLease?.job.id).toBe(dead.id);
      await deadLease!.deadLetter('gave up');
      // running: claimed by a worker that stopped mid-job (its lease runs out), run not ended.
      await queue.enqueue(running);
      expect((await queue.claim({ workerId: 'w' }))?.job.id).toBe(running.id);
      await store.save(runOf(running, ['preparing', 'planning', 'implementing']));
      // queued: never claimed. vanished: not in the queue at all.
      await queue.enqueue(queued);

      const forge = openSqlite(forgeDb);
      forge.exec(`CREATE TABLE pull_requests (repo TEXT, number INTEGER, head TEXT, state TEXT)`);
      forge.prepare(`INSERT INTO pull_requests VALUES (?, 1, ?, 'open')`).run(repo, branchName(done));
      forge.close();

      const verdict = await audit({
        ledger,
        jobs: [done, queued, running, dead, vanished, failed],
        queue,
        store,
        forgeDb,
        repo,
        cacheDir: join(dir.path, 'no-cache'),
        quietMs: 5_000,
      });
      expect(verdict).toMatchObject({
        succeeded: 1,
        unfinished: 2,
        lost: 3,
        unexpected: 2,
        duplicate_prs: 0,
        orphaned_worktrees: 0,
      });
      expect(failures(verdict)).toBe(5);
      expect(failures({ ...verdict, lost: 0, unexpected: 0 })).toBe(0);
      // Each lost job says why, for the log of a failed run.
      expect(verdict.lostWhy.map((line) => line.replace(/attempts=\[[^\]]*\]/, 'attempts=[…]'))).toEqual([
        `${dead.id}: no run forge_open_prs=0 dead-lettered`,
        `${vanished.id}: no run forge_open_prs=0 not in the queue`,
        `${failed.id}: run stage=failed outcome=failed attempts=[…] pr=none forge_open_prs=0`,
      ]);
    } finally {
      await queue.close();
      await store.close();
    }
  });

  it('a run stopped before any job published (no forge file yet) counts its queued jobs as unfinished', async () => {
    const queue = new LocalQueue({
      backend: 'local',
      path: join(dir.path, 'queue.sqlite'),
      name: 'chaos',
      leaseMs: 200,
      maxAttempts: 1_000, // as above: no stall may dead-letter the job the audit holds
      pollMs: 20,
    });
    const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
    try {
      const queued = job('queued');
      await queue.enqueue(queued);
      const verdict = await audit({
        ledger: [{ ev: 'enqueue', job: queued.id, at: 1 }],
        jobs: [queued],
        queue,
        store,
        forgeDb: join(dir.path, 'never-made.sqlite'),
        repo,
        cacheDir: join(dir.path, 'no-cache'),
        quietMs: 5_000,
      });
      expect(verdict).toMatchObject({ succeeded: 0, unfinished: 1, lost: 0 });
    } finally {
      await queue.close();
      await store.close();
    }
  });
});
