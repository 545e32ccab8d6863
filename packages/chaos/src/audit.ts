import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '@codefleet/sqlite';
import type { Job } from '@codefleet/core';
import type { Queue } from '@codefleet/queue';
import type { RunStore } from '@codefleet/store';
import { branchName } from '@codefleet/workspace';

/** One line of the ledger: written by the harness (enqueue), the agent (claim) and git (publish). */
export interface LedgerEntry {
  ev: 'enqueue' | 'claim' | 'publish';
  job?: string;
  ref?: string;
  pid?: number;
  at: number;
}

/** The verdict of a chaos run. */
export interface Verdict {
  /** Enqueued jobs with no succeeded run and open pull request at the end. */
  lost: number;
  /** Pull requests, runs or dead letters that should not exist: for jobs never enqueued, failed runs, dead-lettered jobs. */
  unexpected: number;
  /** Pull requests created beyond the first per head branch. */
  duplicate_prs: number;
  /** Working copies held by dead processes or unknown to git after the fleet stopped. */
  orphaned_worktrees: number;
  /** For information: claims seen, publishes seen, and fenced (refused) stale writes. */
  claims: number;
  publishes: number;
  fenced: number;
}

export function readLedger(path: string): LedgerEntry[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8').split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as LedgerEntry);
}

/** Compares the ledger with what the system holds at the end. */
export async function audit(options: {
  ledger: LedgerEntry[];
  jobs: Job[];
  queue: Queue;
  store: RunStore;
  forgeDb: string;
  repo: string;
  cacheDir: string;
}): Promise<Verdict> {
  const { ledger, jobs, queue, store } = options;
  const enqueued = new Set(ledger.filter((e) => e.ev === 'enqueue').map((e) => e.job));
  const heads = new Map(jobs.map((job) => [branchName(job), job]));

  const db = openSqlite(options.forgeDb, { readonly: true });
  const prs = db.prepare(`SELECT head, COUNT(*) AS n, SUM(state = 'open') AS open FROM pull_requests WHERE repo = ? GROUP BY head`)
    .all(options.repo) as { head: string; n: number; open: number }[];
  db.close();
  const prByHead = new Map(prs.map((p) => [p.head, p]));

  let lost = 0;
  let unexpected = 0;
  let fenced = 0;
  for (const job of jobs) {
    if (!enqueued.has(job.id)) continue;
    const run = await store.get(job.id);
    const pr = prByHead.get(branchName(job));
    if (run?.outcome !== 'succeeded' || !pr || pr.open < 1) lost += 1;
    else if (run.pull_request?.number === undefined) lost += 1;
    if (run?.outcome !== undefined && run.outcome !== 'succeeded') unexpected += 1;
    fenced += (await store.rejections(job.idempotency_key)).length;
  }
  for (const pr of prs) if (!heads.has(pr.head)) unexpected += pr.n;
  unexpected += (await queue.deadLetters()).length;
  const duplicates = prs.reduce((sum, p) => sum + Math.max(0, p.n - 1), 0);

  return {
    lost,
    unexpected,
    duplicate_prs: duplicates,
    orphaned_worktrees: orphanedCopies(options.cacheDir),
    claims: ledger.filter((e) => e.ev === 'claim').length,
    publishes: ledger.filter((e) => e.ev === 'publish').length,
    fenced,
  };
}

/**
 * Copies nobody will ever clean up by themselves: a lock whose holder process is dead
 * (the workers' start-up sweep and every prepare free those, so after healing none may
 * remain), or a copy directory without a lock that is not a pooled slot.
 */
function orphanedCopies(cacheDir: string): number {
  const root = join(cacheDir, 'worktrees');
  if (!existsSync(root)) return 0;
  let orphans = 0;
  for (const pool of readdirSync(root)) {
    const dir = join(root, pool);
    const names = readdirSync(dir);
    for (const name of names) {
      if (name.endsWith('.lock')) {
        const holder = safeJson(readFileSync(join(dir, name), 'utf8')) as { pid?: number; kept?: boolean } | undefined;
        if (holder?.kept === true) continue;
        if (typeof holder?.pid !== 'number' || !alive(holder.pid)) orphans += 1;
      } else if (/^job-[0-9a-f-]+$/.test(name) && !names.includes(`${name}.lock`)) {
        orphans += 1;
      }
    }
  }
  return orphans;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function safeJson(text: string): unknown {
  try { return JSON.parse(text); } catch { return undefined; }
}
