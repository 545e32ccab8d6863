import { setTimeout as sleep } from 'node:timers/promises';
import { runCostUsd, type Job, type RunRecord } from '@codefleet/core';
import { evalJob, evalJobId, type EvalTask } from './eval-jobs.js';

/** What {@link runEvaluation} needs: somewhere to put jobs and to read their runs. */
export interface EvalRunDeps {
  enqueue(job: Job): Promise<unknown>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /**
   * The queue's dead letters (a dead letter's `id` is its job's, `job` when it still parses):
   * a job dead-lettered before any run ended (it never verified, every delivery crashed) ends
   * there, and is not waited for until the deadline.
   */
  deadLetters?: () => Promise<readonly { id: string; reason: string; deadAt: number; job?: { id: string } }[]>;
  now?: () => Date;
}

/** How an evaluation runs. */
export interface EvalRunOptions {
  digest: string;
  tasks: readonly EvalTask[];
  /** Where workers fetch the repository (a path, URL or owner/name); default each instance's `repo`. */
  repo?: string;
  requestedBy: string;
  /** Eval jobs of one repository queued or running at once; default 2. */
  maxPerRepo?: number;
  /** Money the suite's runs may spend in all (earlier runs of the suite included); none queued past it. */
  budgetUsd?: number;
  /** How often runs are looked at; default 2 s. */
  pollMs?: number;
  /** How often the dead letters are looked at, in polls; default 5 (10 s). */
  deadLetterEvery?: number;
  /** A queued job not finished after this long is given up on (reported, not waited for); default 6 h. */
  jobDeadlineMs?: number;
  signal?: AbortSignal;
  onProgress?: (progress: EvalProgress) => void;
}

/** Where an evaluation is. */
export interface EvalProgress {
  total: number;
  /** Finished before this run started: skipped. */
  earlier: number;
  finished: number;
  running: number;
  /** Given up on: past the deadline with no ended run. */
  abandoned: string[];
  /** Dead-lettered with no ended run: the job's id and the queue's reason. */
  deadLettered: { id: string; reason: string }[];
  /** Not queued because the budget was spent. */
  overBudget: number;
  spentUsd: number;
}

/**
 * Runs an evaluation's tasks as ordinary jobs: each enqueued at most once per run of the
 * suite (its id is fixed by suite, instance, configuration and trial, so tasks an earlier run
 * finished are skipped), at most `maxPerRepo` of one repository queued or running at once so
 * real work keeps its slots, none queued once the suite's runs spent `budgetUsd`. Resolves
 * when every queued task has ended (or was given up on).
 */
export async function runEvaluation(deps: EvalRunDeps, options: EvalRunOptions): Promise<EvalProgress> {
  const now = deps.now ?? (() => new Date());
  const progress: EvalProgress = {
    total: options.tasks.length,
    earlier: 0,
    finished: 0,
    running: 0,
    abandoned: [],
    deadLettered: [],
    overBudget: 0,
    spentUsd: 0,
  };
  const waiting: EvalTask[] = [];
  for (const task of options.tasks) {
    const run = await deps.getRun(evalJobId(options.digest, task));
    if (run?.outcome === undefined) waiting.push(task);
    else {
      progress.earlier += 1;
      progress.spentUsd += runCostUsd(run) ?? 0;
    }
  }
  const running = new Map<string, { repo: string; since: number }>();
  const perRepo = (repo: string) => [...running.values()].filter((r) => r.repo === repo).length;
  for (let poll = 0; waiting.length > 0 || running.size > 0; poll += 1) {
    options.signal?.throwIfAborted();
    for (let i = 0; i < waiting.length;) {
      const task = waiting[i] as EvalTask;
      const repo = options.repo ?? task.instance.repo;
      if (options.budgetUsd !== undefined && progress.spentUsd >= options.budgetUsd) {
        progress.overBudget = waiting.splice(0).length;
        break;
      }
      if (perRepo(repo) >= (options.maxPerRepo ?? 2)) {
        i += 1;
        continue;
      }
      const job = evalJob(options.digest, task, { now: now(), requestedBy: options.requestedBy, repo });
      await deps.enqueue(job);
      running.set(job.id, { repo, since: Date.now() });
      waiting.splice(i, 1);
    }
    progress.running = running.size;
    options.onProgress?.(progress);
    if (running.size === 0) break;
    await sleep(options.pollMs ?? 2_000, undefined, options.signal ? { signal: options.signal } : undefined);
    await collect(deps, running, progress, options.jobDeadlineMs ?? 6 * 3_600_000);
    if (poll % (options.deadLetterEvery ?? 5) === 0) await collectDead(deps, running, progress);
  }
  progress.running = 0;
  options.onProgress?.(progress);
  return progress;
}

// Takes the ended runs out of `running`, counting what they spent; gives up on those past the deadline.
async function collect(
  deps: EvalRunDeps,
  running: Map<string, { since: number }>,
  progress: EvalProgress,
  deadlineMs: number,
): Promise<void> {
  for (const [id, entry] of running) {
    const run = await deps.getRun(id);
    if (run?.outcome !== undefined) {
      running.delete(id);
      progress.finished += 1;
      progress.spentUsd += runCostUsd(run) ?? 0;
    } else if (Date.now() - entry.since > deadlineMs) {
      running.delete(id);
      progress.abandoned.push(id);
    }
  }
}

// Takes the jobs dead-lettered since they were queued, and still without an ended run, out of
// `running`. A dead letter from before (an earlier run of the suite, since redriven) is not theirs.
async function collectDead(
  deps: EvalRunDeps,
  running: Map<string, { since: number }>,
  progress: EvalProgress,
): Promise<void> {
  if (deps.deadLetters === undefined || running.size === 0) return;
  for (const letter of await deps.deadLetters()) {
    const id = letter.job?.id ?? letter.id;
    const entry = running.get(id);
    // A minute's grace: the dead letter's time is the queue host's clock.
    if (entry === undefined || letter.deadAt < entry.since - 60_000) continue;
    if ((await deps.getRun(id))?.outcome !== undefined) continue;
    running.delete(id);
    progress.deadLettered.push({ id, reason: letter.reason });
  }
}
