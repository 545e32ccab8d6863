import { InvalidTransitionError } from './errors.js';

/** Every stage a run can be in, in happy-path order first. */
export const stages = [
  'queued',
  'preparing',
  'planning',
  'implementing',
  'testing',
  'validating',
  'publishing',
  'done',
  'failed',
  'cancelled',
  'retry_wait',
] as const;

/**
 * Where a run is. One line per member in {@link stageDocs}; the allowed moves are in
 * {@link transition}. `done`, `failed` and `cancelled` are terminal.
 */
export type Stage = (typeof stages)[number];

/** One line of documentation per stage. */
export const stageDocs: Readonly<Record<Stage, string>> = {
  queued: 'Accepted and waiting in the queue for a worker.',
  preparing: 'A worker claimed it and is cloning the base branch into an isolated working copy on a new branch.',
  planning: 'Deriving acceptance criteria and the plan from the task text.',
  implementing:
    'Pass 1: the agent implements the change; build errors are fed back (inner retries). Entered again from testing when the next escalation tier takes over.',
  testing: 'Pass 2: the agent writes tests; build, format, lint and test failures are fed back (inner retries).',
  validating: 'Final verification and the definition of done, run by the worker itself.',
  publishing: 'Pushing the branch and ensuring the pull request and the report on the source.',
  done: 'Terminal: published (a ready PR, or a draft when the DoD failed).',
  failed: 'Terminal: gave up (permanent error or retries exhausted); reported on the source.',
  cancelled: 'Terminal: stopped on request before finishing.',
  retry_wait:
    'A transient error stopped the attempt; waiting for backoff before a fresh attempt starts over at preparing.',
};

/** The stages of a successful attempt, in order. */
export const happyPath = [
  'queued',
  'preparing',
  'planning',
  'implementing',
  'testing',
  'validating',
  'publishing',
  'done',
] as const satisfies readonly Stage[];

/** Stages in which a worker is actively running the job. */
export const runningStages = [
  'preparing',
  'planning',
  'implementing',
  'testing',
  'validating',
  'publishing',
] as const satisfies readonly Stage[];

/** Stages with no way out. */
export const terminalStages = ['done', 'failed', 'cancelled'] as const satisfies readonly Stage[];

// The whole transition table, spelled out so tests can enumerate it and a reader can
// check it against the drawing in ARCHITECTURE.md at a glance.
const table: Readonly<Record<Stage, readonly Stage[]>> = {
  queued: ['preparing', 'failed', 'cancelled'],
  preparing: ['planning', 'failed', 'cancelled', 'retry_wait'],
  planning: ['implementing', 'failed', 'cancelled', 'retry_wait'],
  implementing: ['testing', 'failed', 'cancelled', 'retry_wait'],
  // The next tier of an escalation chain starts over at pass 1, from the base.
  testing: ['validating', 'implementing', 'failed', 'cancelled', 'retry_wait'],
  validating: ['publishing', 'failed', 'cancelled', 'retry_wait'],
  publishing: ['done', 'failed', 'cancelled', 'retry_wait'],
  // A fresh attempt starts over from a fresh working copy, never mid-pipeline.
  retry_wait: ['preparing', 'failed', 'cancelled'],
  done: [],
  failed: [],
  cancelled: [],
};

/** True when `value` is one of {@link stages}. */
export function isStage(value: unknown): value is Stage {
  return typeof value === 'string' && Object.hasOwn(table, value);
}

/** The stages `from` may move to (empty for terminal stages). */
export function nextStages(from: Stage): readonly Stage[] {
  return table[from];
}

/** True for `done`, `failed` and `cancelled`. */
export function isTerminal(stage: Stage): boolean {
  return table[stage].length === 0;
}

/** Returns `to` when `from -> to` is allowed; throws `InvalidTransitionError` otherwise. */
export function transition(from: Stage, to: Stage): Stage {
  if (!isStage(from) || !isStage(to) || !table[from].includes(to))
    throw new InvalidTransitionError(String(from), String(to));
  return to;
}
