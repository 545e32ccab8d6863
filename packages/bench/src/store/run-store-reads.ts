/**
 * `npm run bench` (store): what the run store's reads cost once history is long. 100,000
 * realistic runs (realistic-runs.ts), written as the version before the run indexes wrote them
 * (one transaction, one pipeline), then migrated by the store's first open (SQLite) or first
 * read (Redis), which is timed. Then, on each store, the p50 and p95 of
 * 1. the dashboard overview's read (`state=active`, up to 1,000), every 2 s per open tab;
 * 2. a runs page (50 runs and the total) under each filter `codefleet runs` takes, alone and
 *    combined, one matching only old runs, and the page after the first (by its cursor);
 * 3. a run page (`get` of one run);
 * with this process's CPU time beside (on a busy machine the wall time waits for a core), and
 * what a save costs. Target: each p95 ≤ 50 ms. Prints the figures; asserts nothing.
 * CODEFLEET_BENCH_RUNS sets the history size. */
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { RedisRunStore, SqliteRunStore, type RunQuery, type RunStore } from '@codefleet/store';
import { createTempDir, startRedis, type RedisServer } from '@codefleet/testkit';
import type { RunRecord } from '@codefleet/core';
import { percentile, shown, table, type Figure } from '../stats.js';
import { writeOldRedis, writeOldSqlite } from './old-writes.js';
import { benchRepos, realisticRuns } from './realistic-runs.js';

const count = Number(process.env.CODEFLEET_BENCH_RUNS ?? 100_000);
const samples = 25;
const targetMs = 50;
const nowMs = Date.UTC(2026, 5, 1);
const say = (line: string) => console.log(line);

/** The queries a runs page is asked with: each filter alone, some pairs, a window of old runs only. */
const filters: { name: string; query: RunQuery }[] = [
  { name: 'no filter', query: {} },
  { name: 'state=failed', query: { state: 'failed' } },
  { name: 'state=succeeded', query: { state: 'succeeded' } },
  { name: 'state=testing (a stage)', query: { state: 'testing' } },
  { name: 'repo (busiest)', query: { repo: 'acme/repo-0' } },
  { name: 'repo (quiet)', query: { repo: `acme/repo-${benchRepos - 1}` } },
  { name: 'source=github-issue', query: { source: 'github-issue' } },
  { name: 'source=review-follow-up', query: { source: 'review-follow-up' } },
  { name: 'source=chat (a kind)', query: { source: 'chat' } },
  { name: 'agent=codex', query: { agent: 'codex' } },
  { name: 'repo + state=failed', query: { repo: 'acme/repo-3', state: 'failed' } },
  { name: 'agent + source=slack', query: { agent: 'gemini', source: 'slack' } },
  { name: 'state=failed, last 24 h', query: { state: 'failed', since: new Date(nowMs - 86_400_000).toISOString() } },
  {
    name: 'until: the oldest 5,000 runs only',
    query: { until: new Date(nowMs - (count - 5_000) * 70_000).toISOString() },
  },
];

/**
 * Wall milliseconds of each of `samples` calls of `call`, after two unmeasured ones, and this
 * process's CPU milliseconds for each: on a busy machine the wall time waits for a core too.
 */
async function timed(call: (i: number) => Promise<unknown>): Promise<{ wall: number[]; cpu: number[] }> {
  await call(0);
  await call(1);
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < samples; i += 1) {
    const started = performance.now();
    const used = process.cpuUsage();
    await call(i);
    wall.push(performance.now() - started);
    const { user, system } = process.cpuUsage(used);
    cpu.push((user + system) / 1_000);
  }
  return { wall, cpu };
}

async function measure(label: string, store: RunStore, runs: readonly RunRecord[]): Promise<Figure[]> {
  const figures: Figure[] = [];
  const row = (name: string, { wall, cpu }: { wall: number[]; cpu: number[] }, note = '') => {
    const p95 = percentile(wall, 95);
    say(
      `  ${name.padEnd(50)} p50 ${shown(percentile(wall, 50)).padStart(7)}  p95 ${shown(p95).padStart(7)}  CPU p50 ${shown(percentile(cpu, 50)).padStart(6)}${note}`,
    );
    figures.push({
      figure: `${label}: ${name}`,
      measured: `p95 ${shown(p95)}`,
      target: `p95 ≤ ${targetMs} ms`,
      met: p95 <= targetMs,
    });
  };
  const active = await store.list({ state: 'active', limit: 1_000 });
  row(
    'overview (state=active, up to 1,000)',
    await timed(() => store.list({ state: 'active', limit: 1_000 })),
    `  (${active.length} runs)`,
  );
  for (const { name, query } of filters) {
    const first = await store.page({ ...query, limit: 50 });
    row(
      `runs page: ${name}`,
      await timed(() => store.page({ ...query, limit: 50 })),
      `  (${first.runs.length} of ${first.total.toLocaleString('en-US')})`,
    );
  }
  const first = await store.page({ state: 'succeeded', limit: 50 });
  row(
    'runs page: state=succeeded, second page (cursor)',
    await timed(() =>
      store.page({
        state: 'succeeded',
        limit: 50,
        ...(first.nextCursor === undefined ? {} : { cursor: first.nextCursor }),
      }),
    ),
  );
  row('run page (get)', await timed((i) => store.get(runs[(i * 7_919) % runs.length]?.run_id ?? '')));
  return figures;
}

/** Saves 1,000 more runs one at a time, as workers do: the ms each took, on average. */
async function saveCost(store: RunStore, runs: readonly RunRecord[]): Promise<number> {
  const more = runs.slice(0, 1_000).map((run) => ({ ...run, run_id: `${run.run_id}~2` }));
  const started = performance.now();
  for (const run of more) await store.save(run);
  return (performance.now() - started) / more.length;
}

const migration = (label: string, ms: number): Figure => ({
  figure: `${label}: one-time index migration of ${count.toLocaleString('en-US')} runs`,
  measured: shown(ms),
  target: 'none (information)',
  met: undefined,
});

const runs = realisticRuns(count, { nowMs, active: 40 });
const figures: Figure[] = [];
const dir = await createTempDir('bench-store');
let redis: RedisServer | undefined;
try {
  const [load1] = loadavg();
  say(
    `run store reads on ${cpus().length} cores (load average ${load1?.toFixed(1)}), ${count.toLocaleString('en-US')} realistic runs (${Math.round(JSON.stringify(runs[0]).length / 100) / 10} KB a record), ${samples} calls each`,
  );
  // Loaded as the version before the run indexes wrote them, in one transaction or pipeline;
  // the store's first open (SQLite) or read (Redis) then migrates them, which is timed too.
  const path = join(dir.path, 'runs.sqlite');
  writeOldSqlite(path, runs);
  let started = performance.now();
  const sqlite = new SqliteRunStore(path);
  const sqliteMs = performance.now() - started;
  try {
    say(`\nSQLite: written by the version before, migrated at open in ${shown(sqliteMs)}`);
    figures.push(...(await measure('SQLite', sqlite, runs)), migration('SQLite', sqliteMs));
    say(`  a save (1,000 one at a time)                       ${shown(await saveCost(sqlite, runs))} each`);
  } finally {
    await sqlite.close();
  }
  redis = await startRedis();
  await writeOldRedis(redis.url, 'bench', runs);
  const store = new RedisRunStore({ url: redis.url, prefix: 'bench' });
  try {
    started = performance.now();
    await store.list({ limit: 1 });
    const redisMs = performance.now() - started;
    say(`\nRedis: written by the version before, migrated at the first read in ${shown(redisMs)}`);
    figures.push(...(await measure('Redis', store, runs)), migration('Redis', redisMs));
    say(`  a save (1,000 one at a time)                       ${shown(await saveCost(store, runs))} each`);
  } finally {
    await store.close();
  }
} finally {
  await redis?.stop();
  await dir.dispose();
}
say(`\n${table(figures)}`);
