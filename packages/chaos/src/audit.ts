import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '@codefleet/sqlite';
import type { Job, RunRecord } from '@codefleet/core';
import type { Lease, Queue } from '@codefleet/queue';
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
  /**
   * Enqueued jobs that ended without their pull request (a run that failed or was cancelled,
   * a succeeded run without an open pull request, a dead letter), or that vanished: no run of
   * theirs ended and the queue no longer holds them.
   */
  lost: number;
  /** Why each lost job counts as lost, a line each: what its run says and where the queue has it. */
  lostWhy: string[];
  /**
   * Jobs the queue still holds (queued, delayed or running) when the run stopped, no run of
   * theirs ended: a fleet on a loaded machine may leave some, which is slowness, not loss.
   */
  unfinished: number;
  /** Pull requests, runs or dead letters that should not exist: for jobs never enqueued, failed runs, dead-lettered jobs. */
  unexpected: number;
  /** Pull requests created beyond the first per head branch. */
  duplicate_prs: number;
  /** Working copies held by dead processes or unknown to git after the fleet stopped. */
  orphaned_worktrees: number;
  /** For information: jobs with a succeeded run and an open pull request, claims seen, publishes seen, and fenced (refused) stale writes. */
  succeeded: number;
  claims: number;
  publishes: number;
  fenced: number;
}

/** The counts that fail a chaos run; `unfinished` is not one of them. */
export function failures(verdict: Verdict): number {
  return verdict.lost + verdict.unexpected + verdict.duplicate_prs + verdict.orphaned_worktrees;
}

export function readLedger(path: string): LedgerEntry[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as LedgerEntry);
}

/**
 * Compares the ledger with what the system holds at the end; run it once the fleet has
 * stopped. Jobs with no ended run are looked for in the queue (see {@link stillHeld}):
 * found, they are unfinished; not found, lost.
 */
// The local forge makes its file with its first pull request: a run stopped before any job
// published has none, and no pull requests.
function pullRequests(forgeDb: string, repo: string): { head: string; n: number; open: number }[] {
  const db = openSqlite(forgeDb, { readonly: true });
  try {
    return db
      .prepare(
        `SELECT head, COUNT(*) AS n, SUM(state = 'open') AS open FROM pull_requests WHERE repo = ? GROUP BY head`,
      )
      .all(repo) as { head: string; n: number; open: number }[];
  } finally {
    db.close();
  }
}

export async function audit(options: {
  ledger: LedgerEntry[];
  jobs: Job[];
  queue: Queue;
  store: RunStore;
  forgeDb: string;
  repo: string;
  cacheDir: string;
  /** How long the queue may deliver nothing new before the jobs not yet seen count as gone; default 30 s. */
  quietMs?: number;
}): Promise<Verdict> {
  const { ledger, jobs, queue, store } = options;
  const enqueued = new Set(ledger.filter((e) => e.ev === 'enqueue').map((e) => e.job));
  const heads = new Map(jobs.map((job) => [branchName(job), job]));

  const prs = existsSync(options.forgeDb) ? pullRequests(options.forgeDb, options.repo) : [];
  const prByHead = new Map(prs.map((p) => [p.head, p]));

  const runs = new Map<string, RunRecord | undefined>();
  for (const job of jobs) if (enqueued.has(job.id)) runs.set(job.id, await store.get(job.id));
  const open = [...runs].filter(([, run]) => run?.outcome === undefined).map(([id]) => id);
  const held = await stillHeld(queue, new Set(open), options.quietMs ?? 30_000);
  // After the search, which may itself dead-letter a job out of attempts.
  const dead = await queue.deadLetters();
  const deadIds = new Set(dead.map((letter) => letter.id));

  const lostWhy: string[] = [];
  let unfinished = 0;
  let succeeded = 0;
  let unexpected = 0;
  let fenced = 0;
  for (const job of jobs) {
    if (!runs.has(job.id)) continue;
    const run = runs.get(job.id);
    const pr = prByHead.get(branchName(job));
    if (run?.outcome === 'succeeded' && pr && pr.open >= 1 && run.pull_request?.number !== undefined) succeeded += 1;
    else if (run?.outcome !== undefined || deadIds.has(job.id) || !held.has(job.id))
      lostWhy.push(whyLost(job, run, pr, deadIds));
    else unfinished += 1;
    if (run?.outcome !== undefined && run.outcome !== 'succeeded') unexpected += 1;
    fenced += (await store.rejections(job.idempotency_key)).length;
  }
  for (const pr of prs) if (!heads.has(pr.head)) unexpected += pr.n;
  unexpected += dead.length;
  const duplicates = prs.reduce((sum, p) => sum + Math.max(0, p.n - 1), 0);

  return {
    lost: lostWhy.length,
    lostWhy,
    unfinished,
    unexpected,
    duplicate_prs: duplicates,
    orphaned_worktrees: orphanedCopies(options.cacheDir),
    succeeded,
    claims: ledger.filter((e) => e.ev === 'claim').length,
    publishes: ledger.filter((e) => e.ev === 'publish').length,
    fenced,
  };
}

// What a lost job's run and pull request say, for the one who reads a failed run's log.
function whyLost(job: Job, run: RunRecord | undefined, pr: { open: number } | undefined, dead: Set<string>): string {
  const attempts = run?.attempts.map((a) => `${a.n}:${a.worker_id}:${a.outcome ?? 'open'}`).join(',') ?? '';
  return [
    `${job.id}:`,
    run
      ? `run stage=${run.stage} outcome=${run.outcome ?? 'none'} attempts=[${attempts}] pr=${run.pull_request?.number ?? 'none'}`
      : 'no run',
    `forge_open_prs=${pr?.open ?? 0}`,
    dead.has(job.id) ? 'dead-lettered' : run?.outcome === undefined ? 'not in the queue' : '',
  ]
    .join(' ')
    .trimEnd();
}

/**
 * Which of `ids` the queue still holds, found by claiming as a worker would until each was
 * seen, or nothing new came for `quietMs`. With the fleet stopped, a job the queue holds
 * becomes claimable once its lease expires or its retry delay ends, both far shorter than
 * that. Each job claimed is held by heartbeats, so it is not delivered (and charged an
 * attempt) again, then released: the search leaves the jobs as it found them.
 */
async function stillHeld(queue: Queue, ids: ReadonlySet<string>, quietMs: number): Promise<Set<string>> {
  const held = new Map<string, Lease>();
  let keepAlive: NodeJS.Timeout | undefined;
  let lastNew = Date.now();
  try {
    const found = () => [...held.keys()].filter((id) => ids.has(id)).length;
    while (found() < ids.size && Date.now() - lastNew < quietMs) {
      const lease = await queue.claim({ workerId: 'chaos-audit', waitMs: 1_000 });
      if (!lease) continue;
      // Others are held too (a finished job whose ack was lost), or they would come back at once.
      if (ids.has(lease.job.id) && !held.has(lease.job.id)) lastNew = Date.now();
      held.set(lease.job.id, lease);
      keepAlive ??= setInterval(
        () => {
          for (const each of held.values()) each.heartbeat().catch(() => undefined);
        },
        Math.max(50, (lease.expiresAt - Date.now()) / 3),
      );
    }
  } finally {
    clearInterval(keepAlive);
    for (const lease of held.values()) await lease.release().catch(() => undefined);
  }
  return new Set([...held.keys()].filter((id) => ids.has(id)));
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
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
