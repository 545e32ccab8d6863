import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { advance, createJob, finish, newRun, startAttempt } from '@codefleet/core';
import { openSqlite } from '@codefleet/sqlite';
import { SqliteRunStore } from '@codefleet/store';
import { createLocalForge } from '@codefleet/forge';
import { createTempDir, createTempRepo, gitTestEnv, type TempDir, type TempRepo } from '@codefleet/testkit';
import { parseWhen } from '../src/commands/fleet.js';
import { cli, openCliQueue } from './cli-helpers.js';

// `runs` filters and columns, `pending`, `workers`, `cancel`, `retry`, `dlq redrive` / `drop` and `enqueue --priority`,
// in-process against a real SQLite run store and queue and a real git repository.

describe('fleet commands', () => {
  let dir: TempDir;
  let repo: TempRepo;
  beforeEach(async () => {
    dir = await createTempDir('cli-fleet');
    repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
    await mkdir(join(dir.path, 'agent'));
    // Appends a line unless the title asks for nothing: then the job fails with no changes.
    const agent = join(dir.path, 'agent', 'agent.mjs');
    await writeFile(
      agent,
      [
        "import fs from 'node:fs';",
        'const arg = (name) => process.argv[process.argv.indexOf(name) + 1];',
        "if (!fs.readFileSync(arg('--prompt-file'), 'utf8').includes('Change nothing')) fs.appendFileSync(arg('--workdir') + '/notes.txt', 'more\\n');",
      ].join('\n'),
    );
    await writeFile(
      join(dir.path, 'config.yaml'),
      [
        'data_dir: ./data',
        'logging:',
        '  level: silent',
        'worker:',
        '  max_retries: 0',
        '  max_fix_attempts: 1',
        'agents:',
        '  default: script',
        '  script:',
        `    module: ${agent}`,
        '',
      ].join('\n'),
    );
  });
  afterEach(async () => {
    await repo.dispose();
    await dir.dispose();
  });
  const enqueue = async (title: string, ...extra: string[]) => {
    const queued = await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', title, ...extra);
    expect(queued).toMatchObject({ code: 0, err: '' });
    return queued.out.replace('enqueued ', '');
  };
  const withStore = async <T>(fn: (store: SqliteRunStore) => Promise<T>): Promise<T> => {
    const store = new SqliteRunStore(join(dir.path, 'data', 'runs.sqlite'));
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  };

  it('runs: columns say when, how long, which worker, agent and source; filters narrow it', async () => {
    const id = await enqueue('Add a line');
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('processed 1: 1 done');
    // The worker's id: worker_id (the host name) with its pid and a random part.
    const workerId = new RegExp(`^${hostname().replace(/[.]/g, '\\.')}:${process.pid}:[0-9a-f]{6}$`);
    const [json] = JSON.parse((await cli(dir.path, 'runs', '--json')).out) as Record<string, unknown>[];
    expect(json).toMatchObject({
      run_id: id,
      source: 'cli',
      agent: 'script',
      worker: expect.stringMatching(workerId),
      duration_ms: expect.any(Number),
      job_id: id,
      task_key: id,
    });
    const table = (await cli(dir.path, 'runs')).out.split('\n');
    expect(table[0]).toMatch(
      /^RUN +STATUS +STAGE +OUTCOME +ATTEMPTS +PR +CREATED +DURATION +WORKER +AGENT +SOURCE +TITLE$/,
    );
    expect(table[1]).toMatch(
      new RegExp(
        `^${id} +open +done +succeeded +1 +#1 +\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}Z +(?:\\d+ms|[\\d.]+s|\\d+[mhd] \\d{2}[smh]) +\\S+:${process.pid}:[0-9a-f]{6} +script +cli +Add a line$`,
      ),
    );
    // A stopped worker has left the registry.
    expect((await cli(dir.path, 'workers')).out).toBe('no live workers (a worker shows here while it heartbeats)');

    // More runs, written straight to the store, to filter.
    const at = (iso: string) => new Date(iso);
    await withStore(async (store) => {
      const issue = createJob(
        {
          repo: 'acme/widgets',
          source: { kind: 'issue', number: 3 },
          title: 'From an issue',
          body: '',
          requested_by: 'alice',
          agent: 'claude',
        },
        { id: 'old-issue', now: at('2020-01-01T00:00:00Z') },
      );
      const started = advance(
        startAttempt(newRun(issue, { runId: 'old-issue', now: at('2020-01-01T00:00:00Z') }), {
          workerId: 'w9',
          now: at('2020-01-01T00:00:01Z'),
        }),
        'preparing',
        { now: at('2020-01-01T00:00:01Z') },
      );
      await store.save(
        finish(started, 'failed', {
          now: at('2020-01-01T00:01:00Z'),
          error: { code: 'git_failed', verdict: 'permanent', message: 'no' },
        }),
      );
    });
    const ids = async (...argv: string[]) => {
      const listed = await cli(dir.path, 'runs', '--json', ...argv);
      expect(listed).toMatchObject({ code: 0 });
      // The whole answer on one page: nothing to say beside the JSON.
      if (!argv.includes('--limit')) expect(listed.err).toBe('');
      return (JSON.parse(listed.out) as { run_id: string }[]).map((r) => r.run_id);
    };
    expect(await ids()).toEqual([id, 'old-issue']);
    expect(await ids('--state', 'failed')).toEqual(['old-issue']);
    expect(await ids('--state', 'active')).toEqual([]);
    expect(await ids('--source', 'issue', '--agent', 'claude', '--repo', 'acme/widgets')).toEqual(['old-issue']);
    expect(await ids('--since', '2h')).toEqual([id]);
    expect(await ids('--until', '2021-01-01')).toEqual(['old-issue']);
    expect(await ids('--limit', '1')).toEqual([id]);
    // More than a page: how many in all, and the cursor of the next page (beside JSON: on stderr).
    const first = await cli(dir.path, 'runs', '--limit', '1');
    const more = /showing 1 of 2; --cursor (\S+) for more$/.exec(first.out);
    expect(more).not.toBeNull();
    expect((await cli(dir.path, 'runs', '--json', '--limit', '1')).err).toBe(more?.[0]);
    const next = await cli(dir.path, 'runs', '--json', '--limit', '1', '--cursor', more?.[1] ?? '');
    expect(next).toMatchObject({ code: 0, err: 'showing 1 of 2 (the last page)' });
    expect((JSON.parse(next.out) as { run_id: string }[]).map((r) => r.run_id)).toEqual(['old-issue']);
    expect((await cli(dir.path, 'runs', '--cursor', 'nonsense')).err).toContain('is not one this store gave');
    const [old] = JSON.parse((await cli(dir.path, 'runs', '--json', '--until', '3d')).out) as Record<string, unknown>[];
    expect(old).toMatchObject({
      worker: 'w9',
      error_code: 'git_failed',
      duration_ms: 60_000,
      source: 'github-issue',
      agent: 'claude',
    });
    // Source names; a CI follow-up queued before kind `ci` (an api job) lists under its name.
    await withStore(async (store) => {
      const followUp = createJob(
        {
          repo: 'acme/widgets',
          source: { kind: 'api', request_id: 'ci:acme/widgets#7' },
          title: 'Fix CI',
          body: '',
          requested_by: 'codefleet-ci',
        },
        { id: 'old-ci', now: at('2019-01-01T00:00:00Z') },
      );
      await store.save(newRun(followUp, { runId: 'old-ci', now: at('2019-01-01T00:00:00Z') }));
    });
    expect(await ids('--source', 'github-issue')).toEqual(['old-issue']);
    expect(await ids('--source', 'ci-follow-up')).toEqual(['old-ci']);
    expect(await ids('--source', 'cli')).toEqual([id]);
    expect(await ids('--source', 'api')).toEqual(['old-ci']);
    expect(await ids('--source', 'redrive')).toEqual([]);
    const unknown = await cli(dir.path, 'runs', '--source', 'github');
    expect(unknown.code).not.toBe(0);
    expect(unknown.err).toContain(
      'source must be one of github-issue, ci-follow-up, review-follow-up, slack, line, http-api, cli, eval, record, redrive',
    );
    expect((await cli(dir.path, 'runs', '--help')).out).toContain('github-issue, ci-follow-up');
    expect((await cli(dir.path, 'runs', '--since', 'last tuesday')).err).toContain(
      '--since "last tuesday": expected an ISO time',
    );
    expect((await cli(dir.path, 'runs', '--state', 'exploded')).err).toContain('state must be active, an outcome');
  });

  it('cancel: a queued job leaves the queue at once, and the journal says who asked and why', async () => {
    const id = await enqueue('Add a line');
    const asked = await cli(dir.path, 'cancel', id, '--reason', 'wrong repository');
    expect(asked).toMatchObject({
      code: 0,
      out: `cancelled queued job ${id}: taken out of the queue before any worker claimed it`,
    });
    const me = userInfo().username;
    await withStore(async (store) => {
      expect(await store.get(id)).toMatchObject({
        outcome: 'cancelled',
        error: { code: 'cancelled', message: `cancel requested by @${me}` },
      });
      expect(await store.journal()).toEqual([
        {
          kind: 'action',
          action: 'cancel',
          jobId: id,
          runId: id,
          taskKey: id,
          by: me,
          via: 'cli',
          detail: 'wrong repository',
          at: expect.any(String),
        },
      ]);
    });
    // Nothing is left for a worker to claim, and whoever asked is told (a CLI task: the local forge's task).
    expect((await cli(dir.path, 'pending')).out).toBe('no jobs waiting in the queue');
    const forge = createLocalForge({ dbPath: join(dir.path, 'data', 'forge.sqlite'), gitEnv: gitTestEnv() });
    try {
      const comments = await forge.listComments(repo.path, { kind: 'task', key: id });
      expect(comments.map((c) => c.body)).toEqual([expect.stringContaining(`@${me} asked to cancel it`)]);
    } finally {
      await forge.close();
    }
    // A finished run: nothing to cancel, nothing recorded.
    expect(await cli(dir.path, 'cancel', id)).toMatchObject({
      code: 1,
      err: `run ${id} already finished (cancelled); nothing to cancel`,
    });
    // A task key no queued job has here (an issue's, a chat thread's): asked of whichever worker claims it.
    const key = 'github:acme/app#12';
    expect((await cli(dir.path, 'cancel', key)).out).toContain(`cancel requested for ${key}`);
    await withStore(async (store) => {
      expect(await store.cancelRequested(key)).toMatchObject({ by: me });
      expect(await store.journal()).toHaveLength(2);
    });
  });

  it('dlq redrive is written to the journal', async () => {
    const id = await enqueue('Change nothing');
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('1 dead-lettered');
    expect(await cli(dir.path, 'dlq', 'redrive', id)).toMatchObject({ code: 0, out: `redriven ${id}` });
    expect(await cli(dir.path, 'dlq', 'redrive', id)).toMatchObject({ code: 1 });
    await withStore(async (store) => {
      expect(await store.journal()).toEqual([
        { kind: 'action', action: 'redrive', jobId: id, by: userInfo().username, via: 'cli', at: expect.any(String) },
      ]);
    });
  });

  it('retry: a finished run is queued again once, however often asked, and journaled once', async () => {
    const id = await enqueue('Change nothing');
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('1 dead-lettered');
    const first = await cli(dir.path, 'retry', id);
    expect(first).toMatchObject({ code: 0, out: expect.stringContaining(`run ${id} queued again as job `) });
    const retried = /as job (\S+)$/.exec(first.out)?.[1] ?? '';
    const again = await cli(dir.path, 'retry', id);
    expect(again).toMatchObject({ code: 0, out: expect.stringContaining(`already retried as job ${retried}`) });
    // The retry's job runs and fails again: asking for the first run once more still makes no job.
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('processed 1');
    expect((await cli(dir.path, 'retry', id)).out).toContain(`already retried as job ${retried}`);
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('processed 0');
    await withStore(async (store) => {
      expect(await store.journal()).toEqual([
        expect.objectContaining({ action: 'retry', runId: id, jobId: retried, by: userInfo().username, via: 'cli' }),
      ]);
    });
    expect(await cli(dir.path, 'retry', 'no-such-run')).toMatchObject({ code: 1, err: 'no run no-such-run' });
  });

  it('dlq drop removes a dead letter for good, journaled with the reason; only once', async () => {
    const id = await enqueue('Change nothing');
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('1 dead-lettered');
    expect((await cli(dir.path, 'dlq', 'drop', id)).code).toBe(1);
    expect(await cli(dir.path, 'dlq', 'drop', id, '--reason', '  ')).toMatchObject({
      code: 1,
      err: expect.stringContaining('give a reason'),
    });
    expect(await cli(dir.path, 'dlq', 'drop', id, '--reason', 'the repository was archived')).toMatchObject({
      code: 0,
      out: `dropped ${id}`,
    });
    expect(await cli(dir.path, 'dlq', 'drop', id, '--reason', 'again')).toMatchObject({
      code: 1,
      err: `no dead-lettered job ${id}`,
    });
    expect((await cli(dir.path, 'dlq', 'list')).out).toBe('dead-letter queue is empty');
    expect((await cli(dir.path, 'dlq', 'redrive', id)).code).toBe(1);
    await withStore(async (store) => {
      expect(await store.journal()).toEqual([
        {
          kind: 'action',
          action: 'drop',
          jobId: id,
          runId: id,
          taskKey: id,
          by: userInfo().username,
          via: 'cli',
          at: expect.any(String),
          detail: 'the repository was archived',
        },
      ]);
    });
  });

  it('runs lists the other runs when one record cannot be read, flagging that one; show names it', async () => {
    await withStore(async (store) => {
      for (const id of ['good-1', 'bad-1']) {
        const job = createJob(
          { repo: repo.path, source: { kind: 'cli' }, title: `Task ${id}`, requested_by: 'me' },
          { id, now: new Date() },
        );
        await store.save(
          finish(
            startAttempt(newRun(job, { runId: id, now: new Date() }), { workerId: 'w', now: new Date() }),
            'failed',
            {
              now: new Date(),
              error: { code: 'test_failed', verdict: 'permanent', message: 'tests fail' },
            },
          ),
        );
      }
    });
    const db = openSqlite(join(dir.path, 'data', 'runs.sqlite'));
    try {
      db.prepare('UPDATE runs SET record = ? WHERE run_id = ?').run('{"run_id": "bad-1", "stage": "exploded"', 'bad-1');
    } finally {
      db.close();
    }
    const runs = await cli(dir.path, 'runs');
    expect(runs.code).toBe(0);
    const lines = runs.out.split('\n');
    expect(lines.find((l) => l.startsWith('good-1'))).toMatch(/ failed +failed /);
    expect(lines.find((l) => l.startsWith('bad-1'))).toMatch(/ UNREADABLE /);
    expect(runs.out).toContain('1 run record(s) cannot be read (the other runs are fine):');
    expect(runs.out).toContain('run bad-1: its stored record cannot be read');
    const json = JSON.parse((await cli(dir.path, 'runs', '--json')).out) as { run_id: string; unreadable?: string }[];
    expect(json.map((r) => [r.run_id, r.unreadable !== undefined])).toEqual(
      expect.arrayContaining([
        ['good-1', false],
        ['bad-1', true],
      ]),
    );
    expect(await cli(dir.path, 'show', 'bad-1')).toMatchObject({
      code: 1,
      err: expect.stringContaining('run bad-1: its stored record cannot be read'),
    });
  });

  it('enqueue --priority high is claimed before an earlier normal job', async () => {
    const normal = await enqueue('Normal');
    const high = await enqueue('Urgent', '--priority', 'high');
    expect((await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', 'x', '--priority', 'urgent')).err).toContain(
      'Allowed choices are low, normal, high',
    );
    const queue = openCliQueue(dir.path);
    try {
      const first = await queue.claim({ workerId: 't' });
      const second = await queue.claim({ workerId: 't' });
      expect([first?.job.id, second?.job.id]).toEqual([high, normal]);
      expect(first?.job.priority).toBe('high');
    } finally {
      await queue.close();
    }
  });

  it('pending: jobs still queued, and the per-repository limit that holds one back', async () => {
    await appendFile(join(dir.path, 'config.yaml'), 'queue:\n  per_repo_concurrency: 1\n');
    expect(await cli(dir.path, 'pending')).toMatchObject({ code: 0, out: 'no jobs waiting in the queue' });
    const first = await enqueue('First');
    const second = await enqueue('Second');
    const queue = openCliQueue(dir.path);
    try {
      expect((await queue.claim({ workerId: 't' }))?.job.id).toBe(first);
      const listed = await cli(dir.path, 'pending');
      expect(listed.code).toBe(0);
      expect(listed.out).toContain(second);
      expect(listed.out).toContain(`runs 1 job(s), its per-repository limit`);
      expect(listed.out).not.toContain(first);
      const json = JSON.parse((await cli(dir.path, 'pending', '--json')).out) as Record<string, unknown>[];
      expect(json).toEqual([
        expect.objectContaining({ job_id: second, held_by: { limit: 'repo', repo: repo.path, max: 1 } }),
      ]);
    } finally {
      await queue.close();
    }
  });

  it('--since and --until take an ISO time or an age', () => {
    const now = new Date('2026-11-24T12:00:00Z');
    expect(parseWhen('--since', '2h', now)).toBe('2026-11-24T10:00:00.000Z');
    expect(parseWhen('--since', '3d', now)).toBe('2026-11-21T12:00:00.000Z');
    expect(parseWhen('--since', '2026-11-24T09:00+09:00', now)).toBe('2026-11-24T00:00:00.000Z');
    expect(parseWhen('--until', '2026-11-20', now)).toBe('2026-11-20T00:00:00.000Z');
    expect(() => parseWhen('--since', 'tomorrow', now)).toThrow(/expected an ISO time/);
    expect(() => parseWhen('--since', '-2h', now)).toThrow(/expected an ISO time/);
  });
});
