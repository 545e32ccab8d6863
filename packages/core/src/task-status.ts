import type { RunOutcome, RunRecord } from './run.js';
import type { Stage } from './stage.js';

/**
 * A task's status, derived from facts (AgentMine's status derivation): what the run record
 * says and what the forge says of its pull request. Never stored: asked again whenever it
 * is shown, so a PR merged or closed by a human shows without anyone telling codefleet.
 *
 * - `open`: nothing to do for a worker right now: queued and not yet claimed, or its pull
 *   request is open and awaits review (the note says which).
 * - `in_progress`: a worker has it (any stage between preparing and publishing), or it waits
 *   for its next attempt.
 * - `done`: its pull request was merged (or an answer-mode job answered).
 * - `closed`: its pull request was closed without merging.
 * - `failed`, `dod_failed`, `cancelled`: how the run ended, when no merge overrides it.
 */
export const taskStatuses = ['open', 'in_progress', 'done', 'closed', 'failed', 'dod_failed', 'cancelled'] as const;
/** A task's status; see {@link taskStatuses}. */
export type TaskStatus = (typeof taskStatuses)[number];

/** What the forge says of a pull request. */
export type PullRequestFact = 'open' | 'merged' | 'closed';

/** A derived status with what it rests on. */
export interface TaskStatusView {
  status: TaskStatus;
  /**
   * False when the status hangs on a pull request whose state could not be read (forge
   * down, no token): shown as `open?`, the note says why.
   */
  certain: boolean;
  /** One short line: why this status (`queued`, `PR #12 awaiting review`, ...). */
  note: string;
}

/**
 * What a status is derived from: a run record (through {@link taskFactsOf}) or a store's run
 * summary, which has these very fields.
 */
export interface TaskFacts {
  stage: Stage;
  outcome?: RunOutcome | undefined;
  pullRequest?: { number: number } | undefined;
  errorCode?: string | undefined;
}

/** The facts of a run record. */
export function taskFactsOf(run: RunRecord): TaskFacts {
  return {
    stage: run.stage,
    ...(run.outcome === undefined ? {} : { outcome: run.outcome }),
    ...(run.pull_request === undefined ? {} : { pullRequest: { number: run.pull_request.number } }),
    ...(run.error === undefined ? {} : { errorCode: run.error.code }),
  };
}

/** The pull request state a run's status depends on, when it has one and is over. */
export function needsPullRequestState(run: TaskFacts | undefined): boolean {
  return run?.pullRequest !== undefined && run.outcome !== undefined && run.outcome !== 'cancelled';
}

/**
 * The status of a task from the facts of its latest run (`undefined`: queued, no worker has claimed it)
 * and, for a run that opened a pull request, the forge's state of it (`undefined`: not
 * known; `unknownWhy` says why). Pure.
 *
 * Precedence, as AgentMine's table: no run → open; cancelled → cancelled; a merged pull
 * request → done (a human may merge a draft PR whose DoD failed: merged is the fact that
 * counts); a closed one → closed; a run still going → in_progress; then how the run ended.
 */
export function taskStatus(run: TaskFacts | undefined, pr?: PullRequestFact, unknownWhy?: string): TaskStatusView {
  if (run === undefined) return { status: 'open', certain: true, note: 'queued, not yet claimed' };
  if (run.outcome === 'cancelled' || run.stage === 'cancelled')
    return { status: 'cancelled', certain: true, note: 'cancelled' };
  const number = run.pullRequest?.number;
  if (number !== undefined && run.outcome !== undefined) {
    if (pr === 'merged') return { status: 'done', certain: true, note: `PR #${number} merged` };
    if (pr === 'closed') return { status: 'closed', certain: true, note: `PR #${number} closed without merge` };
  }
  if (run.outcome === undefined) {
    if (run.stage === 'queued') return { status: 'open', certain: true, note: 'queued, not yet claimed' };
    if (run.stage === 'retry_wait')
      return { status: 'in_progress', certain: true, note: 'waiting for its next attempt' };
    return { status: 'in_progress', certain: true, note: run.stage };
  }
  const unknown = unknownWhy ?? 'PR state not read';
  switch (run.outcome) {
    case 'succeeded':
      // An answer-mode job: its answer was the work.
      if (number === undefined) return { status: 'done', certain: true, note: 'finished without a pull request' };
      return pr === 'open'
        ? { status: 'open', certain: true, note: `PR #${number} awaiting review` }
        : { status: 'open', certain: false, note: `PR #${number}: ${unknown}` };
    case 'dod_failed':
      return {
        status: 'dod_failed',
        certain: number === undefined || pr !== undefined,
        note:
          number === undefined
            ? 'definition of done failed'
            : `definition of done failed; draft PR #${number}${pr === undefined ? ` (${unknown})` : ''}`,
      };
    case 'no_changes':
      return { status: 'failed', certain: true, note: 'no changes' };
    default:
      return { status: 'failed', certain: true, note: run.errorCode ?? 'failed' };
  }
}

/** The status as one word for tables: `open?` when it could not be confirmed. */
export function statusLabel(view: TaskStatusView): string {
  return view.certain ? view.status : `${view.status}?`;
}

/**
 * Reads pull request states, keyed `repo#number` (`createPullRequestStates` of the forge
 * package); never rejects, answers `{ why }` for what it could not read.
 */
export type PullRequestStatesReader = (
  keys: readonly { repo: string; number: number }[],
) => Promise<ReadonlyMap<string, { state?: PullRequestFact | undefined; why?: string | undefined }>>;

/**
 * The statuses of many runs (a runs list), in their order: the forge is asked once for every
 * finished run with a pull request (`read`; none given: those show `open?`, "forge not
 * asked"). Never rejects, whatever `read` does.
 */
export async function taskStatusesOf(
  runs: readonly (TaskFacts & { repo: string })[],
  read?: PullRequestStatesReader,
): Promise<TaskStatusView[]> {
  const keys = runs.filter(needsPullRequestState).map((run) => ({ repo: run.repo, number: run.pullRequest!.number }));
  let answers: ReadonlyMap<string, { state?: PullRequestFact | undefined; why?: string | undefined }> = new Map();
  let failure = read === undefined ? 'forge not asked' : undefined;
  if (read !== undefined && keys.length > 0) {
    answers = await read(keys).catch((error: unknown) => {
      failure = `forge not readable: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`;
      return new Map();
    });
  }
  return runs.map((run) => {
    if (!needsPullRequestState(run)) return taskStatus(run);
    const answer = answers.get(`${run.repo}#${run.pullRequest!.number}`);
    return taskStatus(run, answer?.state, answer?.why ?? failure ?? 'forge gave no answer');
  });
}
