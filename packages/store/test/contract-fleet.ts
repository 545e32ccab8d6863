import { afterEach, describe, expect, it } from '@jest/globals';
import {
  advance,
  createJob,
  finish,
  newRun,
  startAttempt,
  type AgentRun,
  type CreateJobInput,
  type RunRecord,
} from '@codefleet/core';
import { maxWorkerJobs, type JournalEntry, type RunStore, type WorkerInfo } from '../src/index.js';

const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
const at = (s: number) => t(s).toISOString();

function run(n: number, job: Partial<CreateJobInput> = {}): RunRecord {
  return newRun(
    createJob(
      { repo: '/srv/repos/widgets', source: { kind: 'cli' }, title: `task ${n}`, body: '', requested_by: 'me', ...job },
      { id: `job-${n}`, now: t(n * 10) },
    ),
    { runId: `job-${n}`, now: t(n * 10) },
  );
}

const agentRun: AgentRun = {
  pass: 'implement',
  attempt: 1,
  inner_attempt: 1,
  agent: 'claude',
  exit_code: 0,
  signal: null,
  timed_out: false,
  duration_ms: 5,
  output_tail: '',
  changed_files: [],
  outcome: 'changed',
};

/** Through the happy path to publishing, where a run can succeed. */
const publishing = (r: RunRecord, s: number): RunRecord =>
  (['planning', 'implementing', 'testing', 'validating', 'publishing'] as const).reduce(
    (next, stage) => advance(next, stage, { now: t(s) }),
    r,
  );

/** Six runs, one per created second, covering each filter. */
async function seed(store: RunStore): Promise<void> {
  const running = (r: RunRecord, s: number) =>
    advance(startAttempt(r, { workerId: `w-${s}`, now: t(s) }), 'preparing', { now: t(s) });
  await store.save(run(1));
  await store.save(finish(publishing(running(run(2), 21), 22), 'succeeded', { now: t(25) }));
  await store.save(
    finish(running(run(3, { repo: '/srv/repos/gadgets', agent: 'codex' }), 31), 'failed', {
      now: t(39),
      error: { code: 'test_failed', verdict: 'agent_fixable', message: 'tests failed' },
    }),
  );
  await store.save(running(run(4, { source: { kind: 'issue', number: 4 }, idempotency_key: 'acme#issue-4' }), 41));
  // The agent it ran, recorded on the run, when the job named none.
  await store.save({ ...running(run(5, { source: { kind: 'api' } }), 51), agent_runs: [{ ...agentRun }] });
  await store.save(finish(running(run(6, { repo: '/srv/repos/gadgets' }), 61), 'cancelled', { now: t(62) }));
}

const worker = (id: string, extra: Partial<WorkerInfo> = {}): WorkerInfo => ({
  id,
  host: 'h1',
  pid: 42,
  version: '0.1.0',
  queue: 'codefleet',
  backend: 'redis',
  concurrency: 2,
  startedAt: at(0),
  lastHeartbeat: at(1),
  draining: false,
  jobs: [],
  ...extra,
});

/** A store under test, and a way to damage a record behind its back (as a disk, a bug or an older version could). */
export interface Opened {
  store: RunStore;
  /** Overwrites the stored record of `runId` with `text`, as is. */
  corrupt(runId: string, text: string): Promise<void>;
  dispose(): Promise<void>;
}

/** The fleet-facing part of the run store contract: run filters, the worker registry, the journal. */
export function fleetContract(name: string, open: (options?: { journalLimit?: number }) => Promise<Opened>): void {
  describe(`run store fleet contract: ${name}`, () => {
    const opened: Opened[] = [];
    let last: Opened | undefined;
    const fresh = async (options?: { journalLimit?: number }) => {
      const o = await open(options);
      opened.push(o);
      last = o;
      return o.store;
    };
    afterEach(async () => {
      for (const o of opened.splice(0)) {
        await o.store.close();
        await o.dispose();
      }
    });

    it('summaries carry source, agent, worker, duration, error code, task key and job id', async () => {
      const store = await fresh();
      await seed(store);
      const byId = new Map((await store.list()).map((s) => [s.runId, s]));
      expect(byId.get('job-3')).toMatchObject({
        source: 'cli',
        agent: 'codex',
        worker: 'w-31',
        durationMs: 9_000,
        errorCode: 'test_failed',
        outcome: 'failed',
        taskKey: expect.any(String),
        jobId: 'job-3',
      });
      expect(byId.get('job-4')).toMatchObject({
        source: 'github-issue',
        worker: 'w-41',
        durationMs: 1_000,
        taskKey: 'acme#issue-4',
        jobId: 'job-4',
      });
      expect(byId.get('job-5')).toMatchObject({ source: 'http-api', agent: 'claude' });
      expect(byId.get('job-1')).toMatchObject({ source: 'cli', durationMs: 0 });
      expect(byId.get('job-1')).not.toHaveProperty('worker');
      expect(byId.get('job-1')).not.toHaveProperty('agent');
      expect(byId.get('job-2')).not.toHaveProperty('errorCode');
    });

    it('filters by state, repo, source, agent and time, combined with AND, newest first', async () => {
      const store = await fresh();
      await seed(store);
      const ids = async (query: Parameters<RunStore['list']>[0]) => (await store.list(query)).map((s) => s.runId);
      expect(await ids({})).toEqual(['job-6', 'job-5', 'job-4', 'job-3', 'job-2', 'job-1']);
      expect(await ids({ state: 'active' })).toEqual(['job-5', 'job-4', 'job-1']);
      expect(await ids({ state: 'failed' })).toEqual(['job-3']);
      expect(await ids({ state: 'succeeded' })).toEqual(['job-2']);
      expect(await ids({ state: 'done' })).toEqual(['job-2']);
      expect(await ids({ state: 'queued' })).toEqual(['job-1']);
      expect(await ids({ repo: '/srv/repos/gadgets' })).toEqual(['job-6', 'job-3']);
      expect(await ids({ repo: '/srv/repos/gadgets', state: 'active' })).toEqual([]);
      expect(await ids({ source: 'issue' })).toEqual(['job-4']);
      expect(await ids({ agent: 'claude' })).toEqual(['job-5']);
      expect(await ids({ agent: 'codex', repo: '/srv/repos/gadgets' })).toEqual(['job-3']);
      expect(await ids({ since: at(30), until: at(50) })).toEqual(['job-5', 'job-4', 'job-3']);
      // Any offset names the same instant.
      expect(await ids({ since: '2026-01-01T09:00:40+09:00' })).toEqual(['job-6', 'job-5', 'job-4']);
      expect(await ids({ state: 'active', since: at(20) })).toEqual(['job-5', 'job-4']);
      expect(await ids({ limit: 2 })).toEqual(['job-6', 'job-5']);
      expect(await ids({ state: 'active', limit: 1 })).toEqual(['job-5']);
      expect(await ids({ limit: 0 })).toEqual(['job-6']);
      await expect(store.list({ state: 'exploded' })).rejects.toMatchObject({ code: 'invalid_job' });
      await expect(store.list({ since: 'yesterday' })).rejects.toMatchObject({ code: 'invalid_job' });
    });

    it('filters by source name, legacy api jobs and redriven runs included; kinds as before', async () => {
      const store = await fresh();
      const legacy = (n: number, request_id: string) =>
        run(n, { source: { kind: 'api', request_id }, idempotency_key: `legacy-${n}` });
      await store.save(run(1, { source: { kind: 'issue', number: 1 }, idempotency_key: 'acme#issue-1' }));
      await store.save(run(2, { source: { kind: 'issue', number: 1, via: 'ci' }, idempotency_key: 'acme#issue-1' }));
      await store.save(
        run(3, { source: { kind: 'issue', number: 1, via: 'review' }, idempotency_key: 'acme#issue-1' }),
      );
      await store.save(run(4, { source: { kind: 'ci', pull: 9 } }));
      // Written before kinds `ci` and `record`: an api job that is a CI follow-up, and a record.
      await store.save(legacy(5, 'ci:/srv/repos/widgets#8'));
      await store.save(legacy(6, 'github-delivery:d-1'));
      await store.save(run(7, { source: { kind: 'chat', platform: 'slack', channel: 'C1', thread_id: '1.2' } }));
      await store.save(run(8, { source: { kind: 'api', callback_url: 'https://ci.example/hook' } }));
      await store.save(run(9, { source: { kind: 'chat', platform: 'line', channel: 'U1', thread_id: 'x' } }));
      const redriven = run(10, { source: { kind: 'chat', platform: 'slack', channel: 'C1', thread_id: '3.4' } });
      await store.save({ ...redriven, run_id: 'job-10.2', redriven_from: 'job-10' });
      const ids = async (source: string) => (await store.list({ source })).map((s) => s.runId);
      expect(await ids('github-issue')).toEqual(['job-1']);
      expect(await ids('ci-follow-up')).toEqual(['job-5', 'job-4', 'job-2']);
      expect(await ids('review-follow-up')).toEqual(['job-3']);
      expect(await ids('record')).toEqual(['job-6']);
      expect(await ids('slack')).toEqual(['job-7']);
      expect(await ids('line')).toEqual(['job-9']);
      expect(await ids('http-api')).toEqual(['job-8']);
      expect(await ids('redrive')).toEqual(['job-10.2']);
      expect(await ids('cli')).toEqual([]);
      // The kinds filter as they did: on job.source.kind.
      expect(await ids('issue')).toEqual(['job-3', 'job-2', 'job-1']);
      expect(await ids('api')).toEqual(['job-8', 'job-6', 'job-5']);
      expect(await ids('chat')).toEqual(['job-10.2', 'job-9', 'job-7']);
      expect(await store.list({ source: 'ci-follow-up', limit: 2 })).toMatchObject([
        { runId: 'job-5', source: 'ci-follow-up' },
        { runId: 'job-4', source: 'ci-follow-up' },
      ]);
      expect(await store.list({ source: 'redrive' })).toMatchObject([{ source: 'redrive' }]);
      await expect(store.list({ source: 'github' })).rejects.toMatchObject({
        code: 'invalid_job',
        message: expect.stringContaining('github-issue, ci-follow-up, review-follow-up'),
      });
    });

    it('one unreadable record is listed flagged, the others as ever; reading it names the run', async () => {
      const store = await fresh();
      await seed(store);
      // Listed once before the damage: what a page read before is not what it shows after.
      expect((await store.list()).filter((r) => r.unreadable !== undefined)).toEqual([]);
      await last?.corrupt('job-3', '{"run_id": "job-3", "job": {"title": "half a rec');
      // JSON, but not a run record (an older or newer version, a hand edit).
      const stored = await store.get('job-4');
      await last?.corrupt('job-4', JSON.stringify({ ...stored, attempts: 'many' }));
      const listed = await store.list();
      expect(listed.map((r) => r.runId)).toEqual(['job-6', 'job-5', 'job-4', 'job-3', 'job-2', 'job-1']);
      expect(listed.filter((r) => r.unreadable !== undefined).map((r) => r.runId)).toEqual(['job-4', 'job-3']);
      expect(listed.find((r) => r.runId === 'job-3')).toMatchObject({
        title: '(unreadable run record)',
        unreadable: expect.stringContaining('run job-3'),
      });
      expect(listed.find((r) => r.runId === 'job-4')).toMatchObject({
        title: 'task 4',
        stage: 'preparing',
        unreadable: expect.stringContaining('attempts'),
      });
      expect(listed.find((r) => r.runId === 'job-2')).toMatchObject({ outcome: 'succeeded', attempts: 1 });
      // Filters neither fail on it nor lose the readable runs.
      expect((await store.list({ state: 'active' })).map((r) => r.runId)).toEqual(
        expect.arrayContaining(['job-5', 'job-1']),
      );
      expect((await store.list({ repo: '/srv/repos/gadgets' })).map((r) => r.runId)).toEqual(
        expect.arrayContaining(['job-6']),
      );
      const failure = await store.get('job-3').catch((e: unknown) => e);
      expect(failure).toMatchObject({ code: 'invalid_run', message: expect.stringContaining('run job-3') });
      expect((await store.get('job-2'))?.outcome).toBe('succeeded');
    });

    it('a run that finishes leaves the active runs', async () => {
      const store = await fresh();
      const started = advance(startAttempt(run(1), { workerId: 'w', now: t(11) }), 'preparing', { now: t(11) });
      await store.save(started);
      expect((await store.list({ state: 'active' })).map((s) => s.runId)).toEqual(['job-1']);
      await store.save(finish(publishing(started, 12), 'succeeded', { now: t(12) }));
      expect(await store.list({ state: 'active' })).toEqual([]);
      // A late write of the running version does not bring it back.
      await store.save(started);
      expect(await store.list({ state: 'active' })).toEqual([]);
    });

    it('workers: heartbeat upserts, listed by id until their ttl passes, removed on stop', async () => {
      const store = await fresh();
      expect(await store.listWorkers()).toEqual([]);
      await store.heartbeatWorker(worker('h2:7:b'), 60_000);
      await store.heartbeatWorker(worker('h1:9:a'), 60_000);
      const job = { jobId: 'job-1', runId: 'job-1', taskKey: 'k1', title: 'task 1', startedAt: at(2) };
      await store.heartbeatWorker(worker('h2:7:b', { lastHeartbeat: at(5), draining: true, jobs: [job] }), 60_000);
      expect(await store.listWorkers()).toEqual([
        worker('h1:9:a'),
        worker('h2:7:b', { lastHeartbeat: at(5), draining: true, jobs: [job] }),
      ]);
      await store.removeWorker('h1:9:a');
      expect((await store.listWorkers()).map((w) => w.id)).toEqual(['h2:7:b']);
      // No heartbeat within the ttl: gone, however the store keeps it.
      await store.heartbeatWorker(worker('h3:1:c'), 100);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await store.listWorkers()).map((w) => w.id)).toEqual(['h2:7:b']);
      // And back with its next heartbeat.
      await store.heartbeatWorker(worker('h3:1:c'), 60_000);
      expect((await store.listWorkers()).map((w) => w.id)).toEqual(['h2:7:b', 'h3:1:c']);
    });

    it('a worker entry keeps a bounded jobs list and cuts long titles', async () => {
      const store = await fresh();
      const jobs = Array.from({ length: maxWorkerJobs + 50 }, (_, i) => ({
        jobId: `j${i}`,
        runId: `j${i}`,
        taskKey: `k${i}`,
        title: 'x'.repeat(5_000),
        startedAt: at(1),
      }));
      await store.heartbeatWorker(worker('w', { jobs }), 60_000);
      const [listed] = await store.listWorkers();
      expect(listed?.jobs).toHaveLength(maxWorkerJobs);
      expect(listed?.jobs[0]?.title.length).toBeLessThanOrEqual(200);
    });

    it('journal: newest first, by run and by kind, limited', async () => {
      const store = await fresh();
      const cancel: JournalEntry = {
        kind: 'action',
        action: 'cancel',
        runId: 'job-1',
        jobId: 'job-1',
        taskKey: 'k1',
        by: 'alice',
        via: 'cli',
        at: at(1),
      };
      const report: JournalEntry = {
        kind: 'undelivered_report',
        runId: 'job-2',
        jobId: 'job-2',
        report: 'Opened PR #3',
        requester: 'github',
        error: 'forge_unavailable: 502',
        at: at(2),
      };
      const redrive: JournalEntry = {
        kind: 'action',
        action: 'redrive',
        jobId: 'job-3',
        by: 'bob',
        via: 'dashboard',
        at: at(3),
        detail: 'from the DLQ',
      };
      const retry: JournalEntry = {
        kind: 'action',
        action: 'retry',
        runId: 'job-1',
        by: 'alice',
        via: 'cli',
        at: at(4),
      };
      for (const entry of [cancel, report, redrive, retry]) await store.record(entry);
      expect(await store.journal()).toEqual([retry, redrive, report, cancel]);
      expect(await store.journal({ runId: 'job-1' })).toEqual([retry, cancel]);
      expect(await store.journal({ kind: 'undelivered_report' })).toEqual([report]);
      expect(await store.journal({ kind: 'action', limit: 2 })).toEqual([retry, redrive]);
      expect(await store.journal({ limit: 1 })).toEqual([retry]);
      expect(await store.journal({ runId: 'job-9' })).toEqual([]);
    });

    it('journal: keeps the newest entries of each kind, and bounds free text', async () => {
      const store = await fresh({ journalLimit: 3 });
      const report: JournalEntry = {
        kind: 'undelivered_report',
        runId: 'r',
        jobId: 'r',
        report: 'y'.repeat(100_000),
        requester: 'chat',
        error: 'e',
        at: at(0),
      };
      await store.record(report);
      for (let i = 1; i <= 5; i += 1)
        await store.record({
          kind: 'action',
          action: 'retry',
          jobId: `j${i}`,
          by: 'x'.repeat(10_000),
          via: 'api',
          at: at(i),
        });
      const entries = await store.journal();
      // Five actions did not push out the one undelivered report.
      expect(entries.map((e) => e.jobId)).toEqual(['j5', 'j4', 'j3', 'r']);
      const [newest] = entries;
      expect(newest?.kind === 'action' && newest.by.length).toBeLessThanOrEqual(256);
      const [kept] = await store.journal({ kind: 'undelivered_report' });
      expect(kept?.kind === 'undelivered_report' && kept.report.length).toBeLessThanOrEqual(4_000);
    });
  });
}
