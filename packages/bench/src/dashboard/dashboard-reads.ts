/**
 * `npm run bench` (dashboard): the dashboard over a long history, measured over HTTP against
 * the real server. 100,000 realistic runs (realistic-runs.ts) on SQLite and on Redis, the
 * dashboard listening on loopback in this process (as `worker --dashboard-port` runs it),
 * then the p50 and p95 of `samples` GETs each of the overview, runs pages under filters (and
 * a later page by cursor, and older pages in turn, each read once) and a run page (a
 * different run each time), wall time and this process's CPU time, each line marked pass or
 * FAIL. Target: each p95 ≤ 50 ms (wall; on a shared machine the CPU time says what is ours).
 * Then a worker's job time on the SQLite store with 8 live dashboard tabs open (two browsers
 * of four: four overviews, four pages of runs) against none, rounds alternated so a change in
 * the machine's load falls on both. A job here is what loads a worker's event loop: a child
 * process per step and a save of the run record after each. Target: ≤ 1.1×.
 * Prints the figures; asserts nothing. CODEFLEET_BENCH_RUNS sets the history size.
 */
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { advance, createJob, finish, newRun, startAttempt } from '@codefleet/core';
import { createDashboard, type DashboardQueue, type DashboardStore } from '@codefleet/dashboard';
import { silentLogger } from '@codefleet/log';
import { LocalQueue, openQueue } from '@codefleet/queue';
import { RedisRunStore, SqliteRunStore } from '@codefleet/store';
import { createTempDir, startRedis, type RedisServer } from '@codefleet/testkit';
import { runWorker } from '@codefleet/worker';
import { median, percentile, shown, table, type Figure } from '../stats.js';
import { writeOldRedis, writeOldSqlite } from '../store/old-writes.js';
import { realisticRuns } from '../store/realistic-runs.js';

const count = Number(process.env.CODEFLEET_BENCH_RUNS ?? 100_000);
const samples = 25;
const targetMs = 50;
const nowMs = Date.UTC(2026, 5, 1);
const token = 'bench-dashboard-token-0123456789';
const say = (line: string) => console.log(line);
// The dashboard's clock starts where the history ends, so "last 24 h" finds its runs.
const startedAt = Date.now();
const clock = () => new Date(nowMs + (Date.now() - startedAt));

/** A dashboard over `queue` and `store` on a free loopback port; resolves its URL and a closer. */
async function serve(queue: DashboardQueue, store: DashboardStore, pollMs = 2_000) {
  const dashboard = createDashboard({
    queue,
    store,
    operators: { bench: token },
    worstCaseMs: 3_600_000,
    pollMs,
    now: clock,
  });
  return { base: await dashboard.listen(), close: () => dashboard.close() };
}

const bearer = { authorization: `Bearer ${token}` };

/** The path of a GET: by its number (the two unmeasured ones are -2 and -1) and the body before. */
type PathOf = (i: number, before: string) => string;

/**
 * Wall ms of `samples` GETs of `pathOf(i)`, after two unmeasured ones, and this process's CPU
 * ms for each (server and client both run here; on a busy machine the wall time waits for a
 * core too). A non-200 answer stops the bench.
 */
async function timedGets(base: string, pathOf: PathOf): Promise<{ wall: number[]; cpu: number[] }> {
  let before = '';
  const get = async (i: number) => {
    const path = pathOf(i, before);
    const res = await fetch(`${base}${path}`, { headers: bearer });
    before = await res.text();
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${before.slice(0, 200)}`);
  };
  await get(-2);
  await get(-1);
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < samples; i += 1) {
    const started = performance.now();
    const used = process.cpuUsage();
    await get(i);
    wall.push(performance.now() - started);
    const { user, system } = process.cpuUsage(used);
    cpu.push((user + system) / 1_000);
  }
  return { wall, cpu };
}

/** The href of a page's "Older" link. */
function olderIn(body: string): string {
  const href = /<a href="([^"]+)" rel="next"/.exec(body)?.[1];
  if (href === undefined) throw new Error('a runs page has no older page');
  return href.replaceAll('&amp;', '&');
}

async function olderOf(base: string, path: string): Promise<string> {
  return olderIn(await (await fetch(`${base}${path}`, { headers: bearer })).text());
}

/** A measured line: p50 and p95 of wall and CPU time, and the p95 against the target. */
function report(name: string, wall: number[], cpu: number[]): { p95: number; cpuP95: number } {
  const p95 = percentile(wall, 95);
  const cpuP95 = percentile(cpu, 95);
  const col = (ms: number, width: number) => shown(ms).padStart(width);
  say(
    `  ${name.padEnd(52)} p50 ${col(percentile(wall, 50), 7)}  p95 ${col(p95, 7)}  CPU p50 ${col(percentile(cpu, 50), 6)} p95 ${col(cpuP95, 6)}  ${p95 <= targetMs ? 'pass' : 'FAIL'}`,
  );
  return { p95, cpuP95 };
}

async function measurePages(label: string, base: string, ids: readonly string[]): Promise<Figure[]> {
  const figures: Figure[] = [];
  const pages: [string, PathOf][] = [
    ['overview', () => '/'],
    ['runs page: no filter', () => '/runs'],
    ['runs page: state=failed', () => '/runs?state=failed'],
    ['runs page: state=active', () => '/runs?state=active'],
    ['runs page: repo (busiest)', () => '/runs?repo=acme%2Frepo-0'],
    ['runs page: repo + state=failed', () => '/runs?repo=acme%2Frepo-3&state=failed'],
    ['runs page: agent + source=slack', () => '/runs?agent=gemini&source=slack'],
    ['runs page: state=failed, last 24 h', () => '/runs?state=failed&window=24h'],
    // Each run read once (the first two aside): what opening runs one after another costs.
    ['run page', (i) => `/runs/${encodeURIComponent(ids[((i + 2) * 7_919) % ids.length] ?? '')}`],
  ];
  const next = await olderOf(base, '/runs?state=succeeded');
  pages.splice(
    8,
    0,
    ['runs page: state=succeeded, next page (cursor)', () => next],
    // Older and older pages, each read once: paging back through history, nothing read before.
    ['runs page: no filter, older pages in turn (cursor)', (i, before) => (i === -2 ? '/runs' : olderIn(before))],
  );
  for (const [name, pathOf] of pages) {
    const { wall, cpu } = await timedGets(base, pathOf);
    const { p95, cpuP95 } = report(name, wall, cpu);
    figures.push({
      figure: `dashboard over HTTP, ${label}: ${name}`,
      measured: `p95 ${shown(p95)} (CPU ${shown(cpuP95)})`,
      target: `p95 ≤ ${targetMs} ms`,
      met: p95 <= targetMs,
    });
  }
  return figures;
}

/** Opens a live stream and reads it until closed; resolves its closer once it is open. */
async function openTab(base: string, path: string, cookie: string): Promise<() => void> {
  const controller = new AbortController();
  const res = await fetch(`${base}${path}`, { headers: { cookie }, signal: controller.signal });
  const reader = res.body!.getReader();
  const first = await reader.read();
  if (first.done || !new TextDecoder().decode(first.value).startsWith('retry: 3000'))
    throw new Error(`live stream ${path} refused`);
  void (async () => {
    for (;;) if ((await reader.read().catch(() => ({ done: true }))).done) return;
  })();
  return () => controller.abort();
}

async function login(base: string): Promise<string> {
  const res = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }).toString(),
  });
  return (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
}

const stages = ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing'] as const;

/** `jobs` jobs through runWorker, one at a time: each stage a child process and a save. Resolves ms per job. */
async function workerRound(queue: LocalQueue, store: SqliteRunStore, round: number, jobs: number): Promise<number> {
  for (let i = 0; i < jobs; i += 1)
    await queue.enqueue(
      createJob(
        {
          repo: 'acme/widgets',
          source: { kind: 'api' },
          title: `bench ${round}.${i}`,
          body: '',
          requested_by: 'bench',
        },
        { id: `job-${round}-${i}`, now: clock() },
      ),
    );
  const started = performance.now();
  const summary = await runWorker(
    queue,
    async (ctx) => {
      let run = startAttempt(newRun(ctx.job, { runId: ctx.job.id, now: clock() }), { workerId: 'bench', now: clock() });
      await store.save(run);
      for (const stage of stages) {
        await execa('git', ['--version']);
        run = advance(run, stage, { now: clock() });
        await store.save(run);
      }
      run = finish(run, 'succeeded', { now: clock(), dodResult: 'skipped' });
      await store.save(run);
      return { action: 'ack', run };
    },
    {
      workerId: 'bench',
      concurrency: 1,
      heartbeatMs: 30_000,
      shutdownGraceMs: 5_000,
      once: true,
      shutdown: new AbortController().signal,
      log: silentLogger(),
    },
  );
  if (summary.acked !== jobs) throw new Error(`acked ${summary.acked} of ${jobs}: ${JSON.stringify(summary)}`);
  return (performance.now() - started) / jobs;
}

/** Job time with 8 live tabs on the worker's own dashboard against none, rounds alternated. */
async function tabsCost(dir: string, store: SqliteRunStore, ids: readonly string[]): Promise<Figure> {
  const queue = new LocalQueue({
    backend: 'local',
    path: join(dir, 'worker-queue.sqlite'),
    name: 'jobs',
    leaseMs: 120_000,
    maxAttempts: 3,
  });
  const dash = await serve(queue, store);
  const none: number[] = [];
  const open: number[] = [];
  try {
    const browsers = [await login(dash.base), await login(dash.base)];
    await workerRound(queue, store, 0, 5);
    for (let round = 1; round <= 6; round += 1) {
      const withTabs = round % 2 === 0;
      const closers = withTabs
        ? await Promise.all(
            Array.from({ length: 8 }, (_, i) =>
              openTab(
                dash.base,
                i % 2 === 0
                  ? '/events?view=overview'
                  : `/events?view=run&id=${encodeURIComponent(ids.at(-1 - i) ?? '')}`,
                browsers[i % 2] ?? '',
              ),
            ),
          )
        : [];
      (withTabs ? open : none).push(await workerRound(queue, store, round, 30));
      for (const close of closers) close();
    }
  } finally {
    await dash.close();
    await queue.close();
  }
  const ratio = median(open) / median(none);
  say(`  job time, no tab open          ${none.map(shown).join(', ')} (median ${shown(median(none))})`);
  say(
    `  job time, 8 live tabs open     ${open.map(shown).join(', ')} (median ${shown(median(open))})  ${ratio.toFixed(2)}×`,
  );
  return {
    figure: `worker job time with 8 live dashboard tabs (SQLite, ${count.toLocaleString('en-US')} runs)`,
    measured: `${ratio.toFixed(2)}× (${shown(median(open))} vs ${shown(median(none))})`,
    target: '≤ 1.1×',
    met: ratio <= 1.1,
  };
}

const figures: Figure[] = [];
const dir = await createTempDir('bench-dashboard');
let redis: RedisServer | undefined;
try {
  const [load1] = loadavg();
  say(
    `dashboard over HTTP on ${cpus().length} cores (load average ${load1?.toFixed(1)}), ${count.toLocaleString('en-US')} realistic runs, ${samples} GETs each`,
  );
  const path = join(dir.path, 'runs.sqlite');
  const server = await startRedis();
  redis = server;
  // Both stores written, then only the ids kept: the process measured is a dashboard's, which
  // holds no history in memory, not one that also carries 100,000 records for its collector.
  const ids = await (async () => {
    const runs = realisticRuns(count, { nowMs, active: 40 });
    writeOldSqlite(path, runs);
    await writeOldRedis(server.url, 'bench', runs);
    return runs.map((run) => run.run_id);
  })();
  const sqlite = new SqliteRunStore(path);
  try {
    const queue = new LocalQueue({
      backend: 'local',
      path: join(dir.path, 'queue.sqlite'),
      name: 'jobs',
      leaseMs: 120_000,
      maxAttempts: 3,
    });
    const dash = await serve(queue, sqlite);
    try {
      say('\nSQLite store, local queue:');
      figures.push(...(await measurePages('SQLite', dash.base, ids)));
    } finally {
      await dash.close();
      await queue.close();
    }
    say('\nA worker on SQLite with its dashboard:');
    figures.push(await tabsCost(dir.path, sqlite, ids));
  } finally {
    await sqlite.close();
  }
  const store = new RedisRunStore({ url: server.url, prefix: 'bench' });
  const queue = await openQueue({
    backend: 'bullmq',
    url: server.url,
    prefix: 'bench',
    name: 'jobs',
    leaseMs: 120_000,
    maxAttempts: 3,
  });
  try {
    await store.list({ limit: 1 });
    const dash = await serve(queue, store);
    try {
      say('\nRedis store, BullMQ queue:');
      figures.push(...(await measurePages('Redis', dash.base, ids)));
    } finally {
      await dash.close();
    }
  } finally {
    await queue.close();
    await store.close();
  }
} finally {
  await redis?.stop();
  await dir.dispose();
}
say(`\n${table(figures)}`);
