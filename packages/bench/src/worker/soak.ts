/**
 * `npm run bench` (worker soak): does a long-lived worker stay as fast and as small as a
 * fresh one? One worker's job-level state, in this process, over many jobs on many
 * repositories: the local queue (enqueue, claim, ack), the SQLite run store (a record per
 * job, saved as the pipeline saves it) and the workspace manager (a real mirror per
 * repository, a pooled copy per job, a commit on the job's branch, release), with retention
 * (store.retention), the cache limits (workspace.cache) and mirror upkeep run every
 * `CODEFLEET_SOAK_PASS_EVERY` jobs, as a worker's housekeeping does. No agent and no checks:
 * they run in child processes and hold no state of the worker's.
 *
 * Every `CODEFLEET_SOAK_SAMPLE_EVERY` jobs a fresh worker (a new manager, queue and store
 * on the same data directory, after the start-up sweep a worker does) runs the same kind of
 * job on the same repository just after the long-lived one: the two job times side by side.
 * Printed: the slope per 1,000 jobs of RSS, open file descriptors, data-dir size and job time
 * (least squares over the samples), and the long-lived / fresh job-time ratio at the start
 * and the end (target ≤ 1.05; issue 29 asks it of ≥ 2,000 jobs and ≥ 200 repositories).
 * Sizes: CODEFLEET_SOAK_JOBS (default 2000), CODEFLEET_SOAK_REPOS (200),
 * CODEFLEET_SOAK_CACHE_MB (cache limit, 40), CODEFLEET_SOAK_KEEP_RUNS (500).
 */
import { readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { advance, createJob, finish, newRun, startAttempt, type Job } from '@codefleet/core';
import { silentLogger } from '@codefleet/log';
import { LocalQueue } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir, createTempRepo, gitTestEnv, type TempRepo } from '@codefleet/testkit';
import { retentionChore, startHousekeeping } from '@codefleet/worker';
import { createWorkspaceManager, diskBytes, type WorkspaceManager } from '@codefleet/workspace';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const jobs = env('CODEFLEET_SOAK_JOBS', 2_000);
const repoCount = env('CODEFLEET_SOAK_REPOS', 200);
const passEvery = env('CODEFLEET_SOAK_PASS_EVERY', 100);
const sampleEvery = env('CODEFLEET_SOAK_SAMPLE_EVERY', 50);
const cacheMb = env('CODEFLEET_SOAK_CACHE_MB', 40);
const keepRuns = env('CODEFLEET_SOAK_KEEP_RUNS', 500);
const line = (label: string, value: string) => console.log(`  ${label.padEnd(58)} ${value}`);
const author = { name: 'Soak', email: 'soak@example.com' };
const gitEnv = gitTestEnv({ PATH: process.env.PATH ?? '/usr/bin:/bin' });

/** One worker's parts on the data directory `dir`. */
interface WorkerParts {
  queue: LocalQueue;
  store: SqliteRunStore;
  workspaces: WorkspaceManager;
}

function openWorker(dir: string, name: string): WorkerParts {
  return {
    queue: new LocalQueue({
      backend: 'local',
      path: join(dir, 'queue.sqlite'),
      name,
      leaseMs: 120_000,
      maxAttempts: 3,
      pollMs: 5,
    }),
    store: new SqliteRunStore(join(dir, 'runs.sqlite')),
    workspaces: createWorkspaceManager({ cacheDir: join(dir, 'cache'), reuse: true, gitEnv }),
  };
}

/** One job as a worker runs it, without the agent: resolves its ms, claim to ack. */
async function runOne(parts: WorkerParts, repo: string, n: number, who: string): Promise<number> {
  const input: Job = createJob(
    { repo, source: { kind: 'cli' }, title: `soak ${who} ${n}`, body: '', requested_by: 'soak' },
    { id: `${who}-${n}`, now: new Date() },
  );
  await parts.queue.enqueue(input);
  const started = performance.now();
  const lease = await parts.queue.claim({ workerId: who, waitMs: 5_000 });
  if (lease === undefined) throw new Error(`job ${input.id} was not claimed`);
  const { job } = lease;
  let run = startAttempt(newRun(job, { runId: job.id, now: new Date() }), { workerId: who, now: new Date() });
  run = advance(run, 'preparing', { now: new Date() });
  await parts.store.save(run);
  const ws = await parts.workspaces.prepare({ jobId: job.id, repoUrl: repo, branch: `ai/soak-${who}-${n}` });
  try {
    await writeFile(join(ws.dir, `change-${who}-${n}.txt`), `${n}\n`);
    await ws.commit(`soak ${n}`, author);
    for (const stage of ['planning', 'implementing', 'testing', 'validating', 'publishing'] as const)
      run = advance(run, stage, { now: new Date() });
    run = finish(run, 'succeeded', { now: new Date(), dodResult: 'passed' });
    await parts.store.save(run);
  } finally {
    await ws.release();
  }
  await lease.ack();
  return performance.now() - started;
}

/** Least-squares slope of `ys` over `xs`. */
function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i += 1) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);

interface Sample {
  job: number;
  rssMb: number;
  fds: number;
  dataMb: number;
  longMs: number;
  freshMs: number;
}

const root = await createTempDir('soak');
const repos: TempRepo[] = [];
const wall = performance.now();
try {
  console.log(
    `worker soak: ${jobs} jobs over ${repoCount} repositories, cache limit ${cacheMb} MB, keep ${keepRuns} runs`,
  );
  for (let i = 0; i < repoCount; i += 1)
    repos.push(
      await createTempRepo({ files: { 'README.md': `# repo ${i}\n`, 'src/index.js': `export const n = ${i};\n` } }),
    );
  const dataDir = join(root.path, 'data');
  await mkdir(dataDir, { recursive: true });
  const worker = openWorker(dataDir, 'soak');
  const housekeeping = startHousekeeping({
    chores: [
      retentionChore(worker.store, worker.queue, { maxAgeDays: 90, maxRuns: keepRuns }),
      async () => {
        const evicted = await worker.workspaces.evict({ maxBytes: cacheMb * 1024 * 1024, graceMs: 0 });
        return { mirrors: evicted.mirrors.length, mirror_refs: await worker.workspaces.maintain() };
      },
    ],
    intervalMs: 3_600_000,
    firstAfterMs: 3_600_000,
    log: silentLogger(),
  });
  const samples: Sample[] = [];
  const times: number[] = [];
  for (let n = 1; n <= jobs; n += 1) {
    const repo = repos[n % repos.length]!.path;
    const ms = await runOne(worker, repo, n, 'long');
    times.push(ms);
    if (n % passEvery === 0) await housekeeping.runNow();
    if (n % sampleEvery !== 0) continue;
    const fresh = openWorker(dataDir, `fresh-${n}`);
    await fresh.workspaces.sweep(() => false);
    const longMs = await runOne(worker, repo, n + 0.5, 'long');
    const freshMs = await runOne(fresh, repo, n, 'fresh');
    await fresh.queue.close();
    await fresh.store.close();
    samples.push({
      job: n,
      rssMb: process.memoryUsage().rss / 1024 / 1024,
      fds: readdirSync('/proc/self/fd').length,
      dataMb: (await diskBytes(dataDir)) / 1024 / 1024,
      longMs,
      freshMs,
    });
    const last = samples[samples.length - 1]!;
    console.log(
      `  job ${String(n).padStart(5)}: rss ${last.rssMb.toFixed(0)} MB, fds ${last.fds}, data ${last.dataMb.toFixed(1)} MB, job ${mean(times.slice(-sampleEvery)).toFixed(0)} ms, long/fresh ${(longMs / freshMs).toFixed(2)}`,
    );
  }
  await housekeeping.stop();
  const xs = samples.map((s) => s.job / 1_000);
  const per = (key: keyof Sample) =>
    slope(
      xs,
      samples.map((s) => s[key]),
    );
  const tenth = Math.max(1, Math.floor(samples.length / 10));
  const ratio = (part: Sample[]) => mean(part.map((s) => s.longMs)) / mean(part.map((s) => s.freshMs));
  console.log('slopes per 1,000 jobs (least squares over the samples; flat is ~0):');
  line('RSS', `${per('rssMb').toFixed(1)} MB`);
  line('open file descriptors', per('fds').toFixed(1));
  line('data dir (queue, run store, cache)', `${per('dataMb').toFixed(1)} MB`);
  const jobXs = times.map((_, i) => (i + 1) / 1_000);
  line('job time, long-lived worker', `${slope(jobXs, times).toFixed(1)} ms`);
  line('long-lived / fresh job time, first tenth of samples', ratio(samples.slice(0, tenth)).toFixed(2));
  line('long-lived / fresh job time, last tenth (target ≤ 1.05)', ratio(samples.slice(-tenth)).toFixed(2));
  line('wall time', `${((performance.now() - wall) / 1_000).toFixed(0)} s`);
  await worker.queue.close();
  await worker.store.close();
} finally {
  for (const repo of repos) await repo.dispose();
  await root.dispose();
}
