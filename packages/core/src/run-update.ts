import type { Classified } from './classify.js';
import { CodefleetError } from './errors.js';
import type { Job } from './job.js';
import type {
  AgentRun,
  Attempt,
  AttemptOutcome,
  DodResult,
  Grade,
  PullRequestRef,
  RunError,
  RunOutcome,
  RunRecord,
  TierRecord,
  Verification,
} from './run.js';
import type { Stage } from './stage.js';
import { transition } from './stage.js';
import { boundTail, defaultTailBytes } from './text.js';

// Every helper here returns a new record and leaves its argument untouched, so a caller
// can keep the previous version (to diff, or to write back after a failed save).

/** The time of an update, passed in to keep the helpers pure. */
export interface At {
  now: Date;
}

// Workers on different hosts disagree about the time; never letting `updated_at` go
// backwards keeps the timeline ordered, at the cost of a slightly late stamp.
function stamp(run: RunRecord, now: Date): string {
  const at = now.toISOString();
  return Date.parse(run.updated_at) > now.getTime() ? run.updated_at : at;
}

function toRunError(error: Classified | RunError): RunError {
  return { code: error.code, verdict: error.verdict, message: error.message };
}

/** A new run in stage `queued`, with an empty history; `note` explains where it came from. */
export function newRun(job: Job, deps: { runId: string; now: Date; note?: string; redrivenFrom?: string }): RunRecord {
  const at = deps.now.toISOString();
  return {
    run_id: deps.runId,
    job,
    stage: 'queued',
    stages: [{ stage: 'queued', at, attempt: 0, ...(deps.note === undefined ? {} : { note: deps.note }) }],
    attempts: [],
    acceptance_criteria: [],
    agent_runs: [],
    verification: [],
    ...(deps.redrivenFrom === undefined ? {} : { redriven_from: deps.redrivenFrom }),
    created_at: at,
    updated_at: at,
  };
}

/** Number of the current (latest) outer attempt; 0 before the first one starts. */
export function currentAttempt(run: RunRecord): number {
  return run.attempts[run.attempts.length - 1]?.n ?? 0;
}

/**
 * Moves the run to stage `to`, recording it in the timeline with the current attempt
 * number. Throws `InvalidTransitionError` for a move the stage table forbids.
 */
export function advance(run: RunRecord, to: Stage, options: At & { note?: string }): RunRecord {
  const stage = transition(run.stage, to);
  const updatedAt = stamp(run, options.now);
  const entry = {
    stage,
    at: updatedAt,
    attempt: currentAttempt(run),
    ...(options.note === undefined ? {} : { note: options.note }),
  };
  return { ...run, stage, stages: [...run.stages, entry], updated_at: updatedAt };
}

function closeOpen(attempt: Attempt, at: string, outcome: AttemptOutcome, error?: RunError): Attempt {
  return { ...attempt, ended_at: at, outcome, ...(error === undefined ? {} : { error }) };
}

/**
 * Opens the next outer attempt for `workerId`. An attempt still open is closed as
 * `abandoned`: with at-least-once delivery, a new attempt means its worker vanished.
 * Its number is at least the queue's `delivery` count: the holder a delivery replaces may
 * have started its attempt without the record ever saying so (the store was down), and
 * must still number below the new one, since the attempt number orders run-record versions.
 */
export function startAttempt(run: RunRecord, options: At & { workerId: string; delivery?: number }): RunRecord {
  const at = stamp(run, options.now);
  const attempts = run.attempts.map((attempt) =>
    attempt.ended_at === undefined ? closeOpen(attempt, at, 'abandoned') : attempt,
  );
  attempts.push({
    n: Math.max(currentAttempt(run) + 1, options.delivery ?? 0),
    worker_id: options.workerId,
    started_at: at,
  });
  return { ...run, attempts, updated_at: at };
}

/** Closes the open attempt. Throws `CodefleetError` `invalid_transition` when none is open. */
export function endAttempt(
  run: RunRecord,
  options: At & { outcome: AttemptOutcome; error?: Classified | RunError },
): RunRecord {
  const last = run.attempts[run.attempts.length - 1];
  if (last === undefined || last.ended_at !== undefined) {
    throw new CodefleetError('invalid_transition', `run ${run.run_id} has no open attempt to end`);
  }
  const at = stamp(run, options.now);
  const closed = closeOpen(
    last,
    at,
    options.outcome,
    options.error === undefined ? undefined : toRunError(options.error),
  );
  return { ...run, attempts: [...run.attempts.slice(0, -1), closed], updated_at: at };
}

/** Appends an agent run; its output tail is cut to `maxTailBytes` (default 8 KiB). */
export function addAgentRun(run: RunRecord, agentRun: AgentRun, options: At & { maxTailBytes?: number }): RunRecord {
  const entry: AgentRun = {
    ...agentRun,
    changed_files: [...agentRun.changed_files],
    output_tail: boundTail(agentRun.output_tail, options.maxTailBytes ?? defaultTailBytes),
  };
  return { ...run, agent_runs: [...run.agent_runs, entry], updated_at: stamp(run, options.now) };
}

/** Appends a verification result; its output tail is cut like an agent run's. */
export function addVerification(
  run: RunRecord,
  verification: Verification,
  options: At & { maxTailBytes?: number },
): RunRecord {
  const entry: Verification = {
    ...verification,
    command: [...verification.command],
    output_tail: boundTail(verification.output_tail, options.maxTailBytes ?? defaultTailBytes),
  };
  return { ...run, verification: [...run.verification, entry], updated_at: stamp(run, options.now) };
}

/** Replaces the acceptance criteria derived while planning. */
export function setAcceptanceCriteria(run: RunRecord, criteria: readonly string[], options: At): RunRecord {
  return { ...run, acceptance_criteria: [...criteria], updated_at: stamp(run, options.now) };
}

/** Records an answer-mode job's answer (bounded by the record's schema, 40 000 characters). */
export function setAnswer(run: RunRecord, answer: string, options: At): RunRecord {
  return { ...run, answer: answer.slice(0, 40_000), updated_at: stamp(run, options.now) };
}

/** Records the working branch and, once it exists, the pull request. */
export function setPublication(
  run: RunRecord,
  publication: { branch: string; pullRequest?: PullRequestRef },
  options: At,
): RunRecord {
  return {
    ...run,
    branch: publication.branch,
    ...(publication.pullRequest === undefined ? {} : { pull_request: { ...publication.pullRequest } }),
    updated_at: stamp(run, options.now),
  };
}

/** Terminal stage for an outcome; `dod_failed` is `done` only if a (draft) PR was published. */
function terminalFor(run: RunRecord, outcome: RunOutcome): Stage {
  switch (outcome) {
    case 'succeeded':
      return 'done';
    case 'cancelled':
      return 'cancelled';
    case 'dod_failed':
      return run.stage === 'publishing' ? 'done' : 'failed';
    case 'failed':
    case 'no_changes':
      return 'failed';
  }
}

function attemptOutcomeFor(outcome: RunOutcome): AttemptOutcome {
  if (outcome === 'succeeded') return 'succeeded';
  if (outcome === 'cancelled') return 'cancelled';
  return 'failed';
}

/**
 * Ends the run: sets the outcome (and error / DoD result), closes the open attempt and
 * moves to the terminal stage (`succeeded` -> done, `cancelled` -> cancelled, `failed` and
 * `no_changes` -> failed, `dod_failed` -> done from publishing, else failed). Throws
 * `InvalidTransitionError` when that move is not allowed, e.g. a finished run.
 */
export function finish(
  run: RunRecord,
  outcome: RunOutcome,
  options: At & { error?: Classified | RunError; dodResult?: DodResult; note?: string },
): RunRecord {
  const error = options.error === undefined ? undefined : toRunError(options.error);
  let next = advance(run, terminalFor(run, outcome), options);
  const last = next.attempts[next.attempts.length - 1];
  if (last !== undefined && last.ended_at === undefined) {
    next = endAttempt(next, {
      now: options.now,
      outcome: attemptOutcomeFor(outcome),
      ...(error === undefined ? {} : { error }),
    });
  }
  return {
    ...next,
    outcome,
    ...(error === undefined ? {} : { error }),
    ...(options.dodResult === undefined ? {} : { dod_result: options.dodResult }),
  };
}

/** Records the memory bank files the change proposes to add or edit (shown in the PR body). */
export function setMemoryUpdates(run: RunRecord, files: readonly string[], options: At): RunRecord {
  return { ...run, memory_updates: [...files].sort().slice(0, 100), updated_at: stamp(run, options.now) };
}

/** Stores the DoD result as soon as it is known, before the run ends. */
export function setDodResult(run: RunRecord, dodResult: DodResult, options: At): RunRecord {
  return { ...run, dod_result: dodResult, updated_at: stamp(run, options.now) };
}

/** Records the verdict of the job's hidden tests. */
export function setGrade(run: RunRecord, grade: Grade, options: At): RunRecord {
  return { ...run, grade, updated_at: stamp(run, options.now) };
}

/** Adds what the sandbox stopped in one run (refusals, a limit hit) to the run's findings. */
export function addSandboxFindings(
  run: RunRecord,
  found: {
    refused?: readonly { destination: string; reason: string }[];
    refusedTotal?: number;
    limit?: { limit: string; max: number; seen: number };
    command: readonly string[];
  },
  options: At,
): RunRecord {
  const before = run.sandbox ?? { network_refused: [], network_refused_total: 0, resource_limits: [] };
  const refused = (found.refused ?? []).map((each) => ({
    destination: each.destination.slice(0, 300),
    reason: each.reason.slice(0, 300),
  }));
  const limits =
    found.limit === undefined
      ? []
      : [{ ...found.limit, limit: found.limit.limit.slice(0, 40), command: found.command.join(' ').slice(0, 200) }];
  return {
    ...run,
    sandbox: {
      network_refused: [...before.network_refused, ...refused].slice(0, 50),
      network_refused_total: before.network_refused_total + (found.refusedTotal ?? refused.length),
      resource_limits: [...before.resource_limits, ...limits].slice(0, 20),
    },
    updated_at: stamp(run, options.now),
  };
}

/** Records the escalation chain the job runs: its name and its tiers, in order. */
export function setChain(run: RunRecord, chain: { name: string; tiers: readonly string[] }, options: At): RunRecord {
  return { ...run, chain: { name: chain.name, tiers: [...chain.tiers] }, updated_at: stamp(run, options.now) };
}

/** What a tier's agent runs cost so far: the sum of their `cost_usd`; undefined when none reported one. */
export function tierCost(run: RunRecord, tier: number): number | undefined {
  const costs = run.agent_runs.filter((r) => r.tier === tier && r.cost_usd !== undefined).map((r) => r.cost_usd ?? 0);
  return costs.length === 0 ? undefined : costs.reduce((sum, cost) => sum + cost, 0);
}

/**
 * Opens a tier of the escalation chain. A tier already in the record (a retried delivery
 * resuming it) is reopened in place rather than added again: one entry per tier, whose
 * cost counts its runs across deliveries as its budget does.
 */
export function startTier(
  run: RunRecord,
  tier: Pick<TierRecord, 'tier' | 'profile' | 'agent' | 'model'>,
  options: At,
): RunRecord {
  const at = stamp(run, options.now);
  const entry: TierRecord = {
    tier: tier.tier,
    profile: tier.profile,
    agent: tier.agent,
    ...(tier.model === undefined ? {} : { model: tier.model }),
    started_at: run.tiers?.find((t) => t.tier === tier.tier)?.started_at ?? at,
  };
  const others = (run.tiers ?? []).filter((t) => t.tier !== tier.tier);
  const tiers = [...others, entry].sort((a, b) => a.tier - b.tier);
  return { ...run, tiers, updated_at: at };
}

/**
 * Closes tier `tier` with its outcome and, for a tier that did not succeed, why (its last
 * feedback, cut to the record's 2000 characters); its cost is summed from its agent runs.
 * Throws `CodefleetError` `invalid_transition` when the tier was never started.
 */
export function endTier(
  run: RunRecord,
  tier: number,
  options: At & { outcome: NonNullable<TierRecord['outcome']>; detail?: string },
): RunRecord {
  const open = run.tiers?.find((t) => t.tier === tier);
  if (open === undefined)
    throw new CodefleetError('invalid_transition', `run ${run.run_id} has no tier ${tier} to end`);
  const at = stamp(run, options.now);
  const cost = tierCost(run, tier);
  const { detail: _previous, cost_usd: _cost, ...kept } = open;
  const closed: TierRecord = {
    ...kept,
    ended_at: at,
    outcome: options.outcome,
    ...(cost === undefined ? {} : { cost_usd: cost }),
    ...(options.detail === undefined ? {} : { detail: options.detail.slice(0, 2000) }),
  };
  return { ...run, tiers: (run.tiers ?? []).map((t) => (t.tier === tier ? closed : t)), updated_at: at };
}
