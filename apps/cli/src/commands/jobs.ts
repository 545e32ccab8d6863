import { randomUUID } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { InvalidArgumentError } from 'commander';
import {
  checkRepoRef,
  CodefleetError,
  createJob,
  maxBodyChars,
  maxPatchBytes,
  summarizeReason,
  taskFactsOf,
  type Job,
  type TaskStatusView,
} from '@codefleet/core';
import { generationOf, runIdOf, type RunQuery, type RunSummary } from '@codefleet/store';
import { displayText, formatRun, formatRuns, type LaterRun } from '../format.js';
import { gitEnvFrom, type Runtime } from '../runtime.js';
import { agentReadiness } from '../agent-check.js';
import { fsProblem } from '../fs-problem.js';
import { checkLocalRepo } from './local-repo.js';
import { statusesOf, uncertainNote } from '../task-status.js';

/** Options of `codefleet enqueue`. */
export interface EnqueueOptions {
  repo: string;
  title: string;
  body?: string;
  bodyFile?: string;
  agent?: string;
  base?: string;
  /** A full commit id to start from (`--base-commit`). */
  baseCommit?: string;
  /** A file holding the patch to apply instead of running an agent (`--patch-file`). */
  patchFile?: string;
  /** A file holding tests only the verifier applies (`--hidden-tests-file`), and those that must pass (`--hidden-test`). */
  hiddenTestsFile?: string;
  hiddenTest?: string[];
  type?: Job['type'];
  priority?: Job['priority'];
  /** DoD commands as argv arrays (see dod-option.ts: the CLI never splits a string into words). */
  dod?: string[][];
  requestedBy?: string;
}

/** A repo given as a relative local path is made absolute; owner/name and URLs stay as given. */
export function normalizeRepo(repo: string, cwd: string): string {
  const looksLocal =
    repo.startsWith('.') ||
    (!repo.includes('://') && !/^[\w.-]+\/[\w.-]+$/.test(repo) && !/^[\w.-]+@[\w.-]+:/.test(repo));
  return looksLocal && !isAbsolute(repo) ? resolve(cwd, repo) : repo;
}

/**
 * Builds a CLI job (validated: a bad field is a clear error naming it) and enqueues it.
 * `warning` says the job's agent cannot run on this host while the queue is a remote one.
 */
export async function enqueue(
  rt: Runtime,
  options: EnqueueOptions,
  cwd = process.cwd(),
): Promise<{ id: string; deduplicated: boolean; warning?: string }> {
  // An empty --repo would resolve to the current directory, which nobody means.
  if (options.repo.trim() === '')
    throw new InvalidArgumentError('--repo is empty: give a local path, a git URL, or GitHub owner/name');
  // A description is at most maxBodyChars characters, of up to 4 bytes each.
  const body =
    options.bodyFile !== undefined
      ? await readTextFile('--body-file', options.bodyFile, cwd, maxBodyChars * 4)
      : (options.body ?? '');
  const patch =
    options.patchFile === undefined
      ? undefined
      : await readTextFile('--patch-file', options.patchFile, cwd, maxPatchBytes);
  const hiddenPatch =
    options.hiddenTestsFile === undefined
      ? undefined
      : await readTextFile('--hidden-tests-file', options.hiddenTestsFile, cwd, maxPatchBytes);
  const repo = normalizeRepo(options.repo, cwd);
  const ref = checkRepoRef(repo);
  // A local repository is checked now, not when a worker first fails to fetch it. A refused
  // repo string (credentials in a URL ...) is left to createJob, which names the field.
  if (typeof ref !== 'string' && ref.kind === 'path') {
    const problem = await checkLocalRepo(ref.path, gitEnvFrom(rt.loaded.env));
    if (problem !== undefined) throw new InvalidArgumentError(`--repo ${ref.path}: ${problem}`);
  }
  const job = createJob(
    {
      repo,
      source: { kind: 'cli' },
      title: options.title,
      body,
      requested_by: options.requestedBy ?? rt.loaded.env.USER ?? 'cli',
      ...(options.agent ? { agent: options.agent } : {}),
      ...(options.base ? { base_branch: options.base } : {}),
      ...(options.baseCommit ? { base_commit: options.baseCommit } : {}),
      ...(options.type ? { type: options.type } : {}),
      ...(options.priority ? { priority: options.priority } : {}),
      ...(options.dod && options.dod.length > 0 ? { dod: options.dod } : {}),
      ...(patch === undefined ? {} : { patch }),
      ...(hiddenPatch === undefined
        ? {}
        : { hidden_tests: { patch: hiddenPatch, ...(options.hiddenTest ? { tests: options.hiddenTest } : {}) } }),
    },
    { id: randomUUID(), now: new Date() },
  );
  // After the job is valid, so a bad field is named first.
  const warning = await agentProblem(rt, options.agent);
  const queued = await rt.queue.enqueue(job);
  return warning === undefined ? queued : { ...queued, warning };
}

/**
 * Whether the job's agent can run, before it is queued rather than when a worker
 * dead-letters it. The local queue is worked on this host with this config: a job that
 * cannot run is refused, naming the setting to change. A remote queue (BullMQ, SQS) may be
 * worked elsewhere with another config: there it is only a warning.
 */
async function agentProblem(rt: Runtime, agent: string | undefined): Promise<string | undefined> {
  const name = agent ?? rt.config.agents.default;
  // The sandbox a worker here runs jobs in; one that cannot open here is the worker's to
  // report (it refuses to start), and the program is then only looked up on PATH.
  const sandbox = await rt.sandbox().catch(() => undefined);
  const readiness = await agentReadiness(rt.loaded, name, sandbox);
  if (readiness === undefined || readiness.ok) return undefined;
  const flag = agent === undefined ? '' : ' (--agent)';
  if (rt.config.queue.backend === 'local') {
    throw new CodefleetError(
      'invalid_config',
      `not enqueued: ${readiness.what}${flag}, so a worker here could not run the job; ${readiness.fix}`,
      { details: { agent: name } },
    );
  }
  return `${readiness.what}${flag} on this host; workers with another config may run it, else the job will fail: ${readiness.fix}`;
}

/**
 * The text of the file a flag names (`--body-file`, `--patch-file`), at most `maxBytes`; a
 * missing file, a directory or a larger file is an error naming the flag.
 */
async function readTextFile(flag: string, path: string, cwd: string, maxBytes: number): Promise<string> {
  const file = resolve(cwd, path);
  try {
    // Looked at before it is read: a job carries at most `maxBytes`, and a huge file is no task.
    const { size } = await stat(file);
    if (size > maxBytes)
      throw new InvalidArgumentError(`${flag} ${path}: ${size} bytes, more than a job carries (${maxBytes})`);
    return await readFile(file, 'utf8');
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error;
    throw new InvalidArgumentError(`${flag} ${path}: ${fsProblem(error)}`);
  }
}

/**
 * `codefleet runs`; the JSON keys are the run record's (snake_case), as in `show --json`. When
 * more runs match than fit (or `--cursor` was given), `more` says how many in all and the
 * cursor of the next page: under the table, or on stderr beside JSON, which stays one array.
 */
export async function listRuns(
  rt: Runtime,
  json: boolean,
  query: RunQuery = { limit: 50 },
): Promise<{ out: string; more?: string }> {
  const { runs, total, nextCursor } = await rt.store.page(query);
  const more = pageNote(runs.length, total, nextCursor, query.cursor !== undefined);
  // Derived from facts, the forge's PR state among them; never fails the listing.
  const statuses = await statusesOf(rt, runs);
  if (json)
    return {
      out: JSON.stringify(
        runs.map((r, i) => summaryJson(r, statuses[i])),
        null,
        2,
      ),
      ...(more === undefined ? {} : { more }),
    };
  // "no runs yet" under a filter would say the store is empty when only the filter is.
  const filtered = Object.keys(query).some((key) => key !== 'limit');
  if (runs.length === 0 && filtered) return { out: 'no runs match these filters' };
  const note = uncertainNote(statuses);
  const unreadable = unreadableNote(runs);
  const out =
    formatRuns(runs, Date.now(), statuses) +
    (note === undefined ? '' : `\n\n${displayText(note)}`) +
    (unreadable.length === 0 ? '' : `\n\n${unreadable.map(displayText).join('\n')}`);
  return more === undefined ? { out } : { out: `${out}\n\n${more}` };
}

/** What a page leaves out: nothing to say when it holds every match. */
function pageNote(shown: number, total: number, nextCursor: string | undefined, paged: boolean): string | undefined {
  if (nextCursor === undefined && !paged) return undefined;
  const of = `showing ${shown.toLocaleString('en-US')} of ${total.toLocaleString('en-US')}`;
  return nextCursor === undefined ? `${of} (the last page)` : `${of}; --cursor ${nextCursor} for more`;
}

/** Why the flagged runs cannot be read, a line each: one bad record is listed, never the whole listing failed. */
function unreadableNote(runs: RunSummary[]): string[] {
  const bad = runs.filter((r) => r.unreadable !== undefined);
  if (bad.length === 0) return [];
  return [
    `${bad.length} run record(s) cannot be read (the other runs are fine):`,
    ...bad.map((r) => `  ${r.unreadable ?? ''}`),
  ];
}

function summaryJson(r: RunSummary, status?: TaskStatusView): Record<string, unknown> {
  return {
    run_id: r.runId,
    title: r.title,
    repo: r.repo,
    ...(status === undefined
      ? {}
      : { status: status.status, status_certain: status.certain, status_note: status.note }),
    stage: r.stage,
    ...(r.outcome === undefined ? {} : { outcome: r.outcome }),
    attempts: r.attempts,
    ...(r.pullRequest === undefined ? {} : { pull_request: r.pullRequest }),
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    ...(r.durationMs === undefined ? {} : { duration_ms: r.durationMs }),
    source: r.source,
    ...(r.agent === undefined ? {} : { agent: r.agent }),
    ...(r.worker === undefined ? {} : { worker: r.worker }),
    ...(r.errorCode === undefined ? {} : { error_code: r.errorCode }),
    requested_by: r.requestedBy,
    job_id: r.jobId,
    task_key: r.taskKey,
    ...(r.unreadable === undefined ? {} : { unreadable: r.unreadable }),
  };
}

/** `codefleet show <run-id>`; undefined when there is no such run. */
export async function showRun(rt: Runtime, runId: string, json: boolean): Promise<string | undefined> {
  const run = await rt.store.get(runId);
  if (!run) return undefined;
  if (json) return JSON.stringify(run, null, 2);
  const [status] = await statusesOf(rt, [{ ...taskFactsOf(run), repo: run.job.repo }]);
  return formatRun(run, await laterRuns(rt, runId), status);
}

/** Most runs one job can have that `show` looks for; each redrive of a dead letter adds one. */
const maxGenerations = 1_000;

/**
 * The runs of the same job after `runId`: a job redriven from the dead-letter queue runs
 * again as `<job id>~2`, `~3` … while its failed run stays under the job id.
 */
async function laterRuns(rt: Runtime, runId: string): Promise<LaterRun[]> {
  const { jobId, generation } = generationOf(runId);
  const later: LaterRun[] = [];
  for (let n = generation + 1; n <= maxGenerations; n += 1) {
    const run = await rt.store.get(runIdOf(jobId, n));
    if (run === undefined) break;
    later.push({ runId: run.run_id, stage: run.stage, ...(run.outcome === undefined ? {} : { outcome: run.outcome }) });
  }
  return later;
}

/** `codefleet dlq redrive`, written to the journal when it happened. Resolves the exit code. */
export async function redrive(
  rt: Runtime,
  id: string,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  const result = await rt.queue.redrive(id);
  if (result.status === 'not_found') {
    err(`no dead-lettered job ${id}`);
    return 1;
  }
  if (result.status === 'duplicate_active') {
    err(`job ${result.activeId} with the same idempotency key is still queued or running`);
    return 1;
  }
  if (result.status === 'refused_unsigned') {
    err(
      `not redriven: ${result.reason}. A worker would refuse it again; a job this fleet did make (dead-lettered while a worker lacked the key) is redriven from a host that holds the key it was signed with, anything else is enqueued anew from its source`,
    );
    return 1;
  }
  const { journalAction, operator } = await import('./fleet.js');
  await journalAction(rt, { action: 'redrive', jobId: id, by: operator(rt) }, err);
  out(`redriven ${id}`);
  return 0;
}

/**
 * `codefleet dlq drop <id> --reason <text>`: removes a dead letter for good, journaled with
 * the reason, as the dashboard's Drop does (the same function). Resolves the exit code.
 */
export async function drop(
  rt: Runtime,
  id: string,
  reason: string,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  const { dropDeadLetter } = await import('@codefleet/dashboard');
  const { operator } = await import('./fleet.js');
  const result = await dropDeadLetter(
    { queue: rt.queue, store: rt.store, by: operator(rt), via: 'cli', now: () => new Date() },
    id,
    reason,
  );
  if (result.status !== 200) {
    err(displayText(result.message));
    return 1;
  }
  out(displayText(result.message));
  return 0;
}

/** `codefleet dlq list`. */
export async function listDeadLetters(rt: Runtime, json: boolean): Promise<string> {
  const dead = await rt.queue.deadLetters({ limit: 100 });
  if (json) return JSON.stringify(dead, null, 2);
  if (dead.length === 0) return 'dead-letter queue is empty';
  // One line of reason each: its first sentence and what a "Last feedback:" label introduced;
  // `codefleet show` prints the whole of it.
  return dead
    .map(
      (d) =>
        `${displayText(d.id)}  attempts ${d.attempts}  ${new Date(d.deadAt).toISOString()}  ${displayText(d.job?.title ?? '(malformed)')}\n    reason: ${displayText(summarizeReason(d.reason))}`,
    )
    .join('\n');
}
