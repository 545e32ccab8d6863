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
 * The jobs go as a fleet's do: every other one to one of a few busy repositories, the rest
 * in turn over a long tail. The busy ones grow history (a branch and a commit per job) and
 * are maintained; the tail is more than the cache limit holds, so the limit is reached early
 * and its least recently used mirrors are evicted and fetched again.
 *
 * Every `CODEFLEET_SOAK_SAMPLE_EVERY` jobs a fresh worker (a new manager, queue and store
 * on the same data directory, after the start-up sweep a worker does) and the long-lived
 * one run jobs on the same busy repository, four pairs in alternating order: the two job
 * times side by side. A control worker (a data dir of its own, one repository) runs a job then too: its
 * time moves only with the machine. Printed: the slope per 1,000 jobs of RSS, open file
 * descriptors, data-dir size (and its parts) and job time, over the second half (every
 * limit reached), and the long-lived / fresh job-time ratio at the start and the end
 * (target ≤ 1.05; issue 29 asks it of ≥ 2,000 jobs and ≥ 200 repositories).
 * Sizes: CODEFLEET_SOAK_JOBS (default 2000), CODEFLEET_SOAK_REPOS (200, of which
 * CODEFLEET_SOAK_BUSY 10 busy), CODEFLEET_SOAK_CACHE_MB (cache limit, 3),
 * CODEFLEET_SOAK_KEEP_RUNS (500).
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
import { detail, median } from '../stats.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const jobs = env('CODEFLEET_SOAK_JOBS', 2_000);
const repoCount = env('CODEFLEET_SOAK_REPOS', 200);
const busyCount = env('CODEFLEET_SOAK_BUSY', 10);
const passEvery = env('CODEFLEET_SOAK_PASS_EVERY', 100);
const sampleEvery = env('CODEFLEET_SOAK_SAMPLE_EVERY', 50);
const cacheMb = env('CODEFLEET_SOAK_CACHE_MB', 3);
const keepRuns = env('CODEFLEET_SOAK_KEEP_RUNS', 500);
/** Side-by-side pairs per sample: one pair's ratio swings ±20% with the machine. */
const pairs = 4;
const line = (label: string, value: string) => console.log(detail(label, value));
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

/** The steps of one job, timed apart so a slope can be traced to its cause. */
const steps = ['claim', 'save', 'prepare', 'commit', 'release', 'ack'] as const;
type Step = (typeof steps)[number];
const stepTimes: Record<Step, number[]> = { claim: [], save: [], prepare: [], commit: [], release: [], ack: [] };

/** One job as a worker runs it, without the agent: resolves its ms, claim to ack. */
async function runOne(parts: WorkerParts, repo: string, n: number, who: string): Promise<number> {
  const input: Job = createJob(
    { repo, source: { kind: 'cli' }, title: `soak ${who} ${n}`, body: '', requested_by: 'soak' },
    { id: `${who}-${n}`, now: new Date() },
  );
  await parts.queue.enqueue(input);
  const started = performance.now();
  let mark = started;
  const took = (step: Step) => {
    const now = performance.now();
    if (who === 'long') stepTimes[step].push(now - mark);
    mark = now;
  };
  const lease = await parts.queue.claim({ workerId: who, waitMs: 5_000 });
  if (lease === undefined) throw new Error(`job ${input.id} was not claimed`);
  took('claim');
  const { job } = lease;
  let run = startAttempt(newRun(job, { runId: job.id, now: new Date() }), { workerId: who, now: new Date() });
  run = advance(run, 'preparing', { now: new Date() });
  await parts.store.save(run);
  took('save');
  const ws = await parts.workspaces.prepare({ jobId: job.id, repoUrl: repo, branch: `ai/soak-${who}-${n}` });
  took('prepare');
  try {
    await writeFile(join(ws.dir, `change-${who}-${n}.txt`), `${n}\n`);
    await ws.commit(`soak ${n}`, author);
    took('commit');
    for (const stage of ['planning', 'implementing', 'testing', 'validating', 'publishing'] as const)
      run = advance(run, stage, { now: new Date() });
    run = finish(run, 'succeeded', { now: new Date(), dodResult: 'passed' });
    await parts.store.save(run);
    took('save');
  } finally {
    await ws.release();
    took('release');
  }
  await lease.ack();
  took('ack');
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
  queueMb: number;
  storeMb: number;
  cacheMb: number;
  /** Mean job time of the long-lived worker over the jobs since the last sample. */
  jobMs: number;
  /** The side-by-side pairs: the long-lived worker's and a fresh worker's jobs on one repository, summed. */
  longMs: number;
  freshMs: number;
  /** The control worker's job time (median of three). */
  controlMs: number;
}

/** Bytes of a SQLite file with its WAL, in MB. */
const sqliteMb = async (path: string) =>
  ((await diskBytes(path)) + (await diskBytes(`${path}-wal`)) + (await diskBytes(`${path}-shm`))) / 1024 / 1024;

function printSample(s: Sample): void {
  const split = steps.map((step) => `${step} ${mean(stepTimes[step].slice(-sampleEvery)).toFixed(0)}`).join(' ');
  console.log(
    `  job ${String(s.job).padStart(5)}: job ${s.jobMs.toFixed(0)} ms (${split}), control ${s.controlMs.toFixed(0)} ms, ` +
      `long/fresh ${(s.longMs / s.freshMs).toFixed(2)}; rss ${s.rssMb.toFixed(0)} MB, fds ${s.fds}, ` +
      `data ${s.dataMb.toFixed(1)} MB (queue ${s.queueMb.toFixed(1)}, runs ${s.storeMb.toFixed(1)}, cache ${s.cacheMb.toFixed(1)})`,
  );
}

/**
 * The slopes, over the second half of the samples: by then every repository has been
 * cloned (a first visit costs a clone) and the run count limit has been reached.
 */
function printSlopes(samples: readonly Sample[]): void {
  const settled = samples.slice(Math.floor(samples.length / 2));
  const xs = settled.map((s) => s.job / 1_000);
  const per = (key: keyof Sample) =>
    slope(
      xs,
      settled.map((s) => s[key]),
    );
  const tenth = Math.max(1, Math.floor(samples.length / 10));
  const ratio = (part: readonly Sample[]) => mean(part.map((s) => s.longMs)) / mean(part.map((s) => s.freshMs));
  const from = settled[0]?.job ?? 0;
  console.log(`slopes per 1,000 jobs from job ${from} on (least squares over the samples; flat is ~0):`);
  line('RSS', `${per('rssMb').toFixed(1)} MB`);
  line('open file descriptors', per('fds').toFixed(1));
  line('data dir', `${per('dataMb').toFixed(2)} MB`);
  line('  queue file', `${per('queueMb').toFixed(2)} MB`);
  line('  run store file', `${per('storeMb').toFixed(2)} MB`);
  line('  workspace cache', `${per('cacheMb').toFixed(2)} MB`);
  line('job time, long-lived worker', `${per('jobMs').toFixed(1)} ms`);
  line('job time, control (its own data dir, one repository)', `${per('controlMs').toFixed(1)} ms`);
  line('long-lived / fresh job time, first tenth of samples', ratio(samples.slice(0, tenth)).toFixed(2));
  line('long-lived / fresh job time, last tenth (target ≤ 1.05)', ratio(samples.slice(-tenth)).toFixed(2));
}

/** The repository of job `n`: a busy one for even `n`, else the next of the tail. */
const repoOf = (n: number) =>
  n % 2 === 0 ? (n / 2) % busyCount : busyCount + (((n - 1) / 2) % (repoCount - busyCount));

const root = await createTempDir('soak');
const repos: TempRepo[] = [];
const wall = performance.now();
try {
  console.log(
    `worker soak: ${jobs} jobs over ${repoCount} repositories (${busyCount} busy), cache limit ${cacheMb} MB, keep ${keepRuns} runs`,
  );
  for (let i = 0; i < repoCount; i += 1)
    repos.push(
      await createTempRepo({ files: { 'README.md': `# repo ${i}\n`, 'src/index.js': `export const n = ${i};\n` } }),
    );
  const dataDir = join(root.path, 'data');
  await mkdir(dataDir, { recursive: true });
  const worker = openWorker(dataDir, 'soak');
  // The control: a worker on a data dir of its own and one repository, that runs only the
  // sampled jobs. What it holds barely grows, so its job time moves with the machine alone.
  const controlRepo = await createTempRepo({ files: { 'README.md': '# control\n' } });
  repos.push(controlRepo);
  await mkdir(join(root.path, 'control'));
  const control = openWorker(join(root.path, 'control'), 'control');
  await runOne(control, controlRepo.path, 0, 'control');
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
    times.push(await runOne(worker, repos[repoOf(n)]!.path, n, 'long'));
    if (n % passEvery === 0) await housekeeping.runNow();
    if (n % sampleEvery !== 0) continue;
    // The pair runs on a busy repository: the one whose history a long-lived worker grows.
    const busy = repos[n % busyCount]!.path;
    const fresh = openWorker(dataDir, `fresh-${n}`);
    await fresh.workspaces.sweep(() => false);
    // Pairs in alternating order, so neither side always runs on what the other just warmed.
    let longMs = 0;
    let freshMs = 0;
    for (let k = 0; k < pairs; k += 1) {
      const id = n + (k + 1) / 10;
      if (k % 2 === 1) freshMs += await runOne(fresh, busy, id, 'fresh');
      longMs += await runOne(worker, busy, id, 'long');
      if (k % 2 === 0) freshMs += await runOne(fresh, busy, id, 'fresh');
    }
    await fresh.queue.close();
    await fresh.store.close();
    const controlRuns: number[] = [];
    for (let k = 0; k < 3; k += 1) controlRuns.push(await runOne(control, controlRepo.path, n + k / 4, 'control'));
    const sample: Sample = {
      job: n,
      rssMb: process.memoryUsage().rss / 1024 / 1024,
      fds: readdirSync('/proc/self/fd').length,
      dataMb: (await diskBytes(dataDir)) / 1024 / 1024,
      queueMb: await sqliteMb(join(dataDir, 'queue.sqlite')),
      storeMb: await sqliteMb(join(dataDir, 'runs.sqlite')),
      cacheMb: (await diskBytes(join(dataDir, 'cache'))) / 1024 / 1024,
      jobMs: mean(times.slice(-sampleEvery)),
      longMs,
      freshMs,
      controlMs: median(controlRuns),
    };
    samples.push(sample);
    printSample(sample);
  }
  await housekeeping.stop();
  printSlopes(samples);
  line('wall time', `${((performance.now() - wall) / 1_000).toFixed(0)} s`);
  await control.queue.close();
  await control.store.close();
  await worker.queue.close();
  await worker.store.close();
} finally {
  for (const repo of repos) await repo.dispose();
  await root.dispose();
}
