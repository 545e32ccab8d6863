import type { Agent, AgentRunResult } from '@codefleet/agents';
import {
  addAgentRun,
  addVerification,
  CodefleetError,
  type Pass,
  type RunRecord,
  type Verification,
} from '@codefleet/core';
import {
  errorSignatures,
  feedbackFor,
  fitFeedback,
  planEnv,
  runVerification,
  stepKey,
  type Baseline,
  type StepResult,
  type VerificationOutcome,
  type VerifyPlan,
} from '@codefleet/verify';
import type { Workspace } from '@codefleet/workspace';
import {
  budgetsLeft,
  budgetStop,
  moneyLimits,
  pricedRun,
  recordSpend,
  type BudgetsLeft,
  type MoneyLimits,
} from './budget.js';
import type { Enter, JobContext, PipelineDeps } from './deps.js';
import { agentRunCosts } from './model-calls.js';
import { agentRunSettings } from './agent-run.js';
import { promptFor } from './prompt.js';
import type { JobRunners } from './sandboxed.js';
import type { BaseInstallFailure } from './install.js';
import type { RunTracker } from './tracker.js';

/** Inputs shared by both passes of one attempt. */
export interface PassInput {
  deps: PipelineDeps;
  ctx: JobContext;
  tracker: RunTracker;
  agent: Agent;
  ws: Workspace;
  plan: VerifyPlan;
  criteria: string[];
  runners: JobRunners;
  /** The base commit's results under the plan (see baselineFor); unset: every failure counts. */
  baseline?: Baseline | undefined;
  /** The install on the base, when it failed (installAtBase): the same failure later is not the agent's. */
  baseInstallFailure?: BaseInstallFailure | undefined;
  /**
   * The escalation tier these passes run as (index in the chain, from 0) and the money it may
   * spend (`profiles.<name>.budget_usd`); unset outside a chain. Its runs are recorded with
   * the tier; spending `tierUsd` ends the tier with `budget_exceeded`, `details.scope: 'tier'`.
   */
  budget?: { tierUsd?: number; tier?: number };
  /** Why the earlier tier of the chain gave up (its last feedback, bounded), for this tier's first prompt. */
  earlierTier?: string | undefined;
  /** The repository's memory bank, summarized (readMemoryBank); in every prompt of the job. */
  memory?: string | undefined;
}

/** What a pass ends with. */
export interface PassResult {
  /** The inner attempt whose verification passed. */
  inner: number;
  /** Checks that failed as they fail at the base: not the change's doing. */
  preexisting: StepResult[];
  /** Of those, the ones that could not run at the base either: they checked nothing. */
  unverifiable: StepResult[];
}

/** Records a verification result in the run. */
export function verificationEntry(result: StepResult, pass: Pass, attempt: number, inner: number): Verification {
  return {
    pass,
    attempt,
    inner_attempt: inner,
    step: result.name,
    command: result.command,
    exit_code: result.exitCode,
    signal: result.signal,
    timed_out: result.timedOut,
    duration_ms: result.durationMs,
    output_tail: result.outputTail,
    passed: result.passed,
    ...(result.skipped === true ? { skipped: true } : {}),
    ...(result.preexisting === true ? { preexisting: true } : {}),
    ...(result.unverifiable === true ? { unverifiable: true } : {}),
  };
}

/** The implementing and testing stages with one agent, no chain: pass 1 then pass 2. */
export async function runPasses(input: PassInput, enter: Enter): Promise<PassResult> {
  await enter('implementing');
  await runPass(input, 'implement');
  await enter('testing');
  return runPass(input, 'test');
}

/**
 * One pass of the two-pass loop: run the agent, verify, feed failures back, at
 * most `maxFixAttempts` times. Pass 1 (`implement`) verifies with the build only; pass 2
 * (`test`) runs build → format → lint → test. An agent that times out or cannot start is
 * not something another fix attempt can help with: those throw at once (transient or
 * permanent), and only agent-fixable failures loop. Each run gets what is left of the
 * budgets (the agent's tokens; the least of the job's, the tier's and the fleet day's money)
 * and the price table; the pass stops with `budget_exceeded` when one is spent (see budget.ts).
 * Resolves the inner attempt whose verification passed, with the checks that could not judge it.
 */
export async function runPass(input: PassInput, pass: Pass): Promise<PassResult> {
  const { deps, ctx, tracker, agent, ws } = input;
  const max = deps.settings.maxFixAttempts;
  let feedback: string | undefined;
  // The tree the last failed verification ran on: an attempt that leaves it as it was is
  // not verified again (same tree, same result), and the agent is told it changed nothing.
  let failedTree: string | undefined;
  const limits = moneyLimits(input);
  for (let inner = 1; inner <= max; inner += 1) {
    const left = await budgetsLeft(deps, agent, tracker.run, limits);
    ctx.onProgress?.({ stage: tracker.run.stage, pass, innerAttempt: inner });
    const result = await runAgent(input, pass, inner, feedback, left);
    const unchanged =
      failedTree !== undefined &&
      result.outcome !== 'timeout' &&
      result.outcome !== 'error' &&
      !ctx.signal.aborted &&
      (await ws.fingerprint()) === failedTree;
    await recordAgentRun(input, pass, inner, result, unchanged);
    await stopForAgent(input, pass, inner, result, limits, left);
    if (result.outcome === 'failed') {
      // The detail says why (a turn cap is reached with exit 0): the exit code alone would mislead.
      feedback = `The agent ${result.detail ?? `exited with code ${result.exitCode}`}. Its last output:\n${result.outputTail.slice(-2000)}`;
      continue;
    }
    // Pass 2 may legitimately find the tests already written; pass 1 must change something.
    if (result.outcome === 'no_changes' && pass === 'implement' && (await ws.changedFiles()).length === 0) {
      feedback = 'You did not change any file. Make the change the task asks for.';
      continue;
    }
    if (unchanged) {
      feedback = fitFeedback([
        'You changed nothing since the last attempt, so the same check still fails. Change the code to fix it.\n\n',
        stripNotice(feedback),
      ]);
      deps.log.info(
        { event: 'verify.skipped_unchanged', job_id: ctx.job.id, pass, inner_attempt: inner },
        'the agent left the tree as it was: not verified again',
      );
      continue;
    }
    const verified = await verifyAttempt(input, pass, inner);
    if (verified.passed) return { inner, preexisting: verified.preexisting, unverifiable: verified.unverifiable };
    stopForVerification(input, verified);
    // What fails on the base too is said last: the failing step and its tests come first.
    feedback = verified.failed
      ? fitFeedback([feedbackFor(verified.failed), knownFailures(verified.failed, input.baseline)])
      : 'Verification failed.';
    failedTree = await ws.fingerprint();
    deps.log.info(
      { event: 'verify.step_failed', job_id: ctx.job.id, pass, inner_attempt: inner, step: verified.failed?.name },
      'verification failed; feeding back to the agent',
    );
  }
  // Throws when the last attempt spent the budget: the more precise reason to stop.
  await budgetsLeft(deps, agent, tracker.run, limits);
  throw new CodefleetError(
    'fix_attempts_exhausted',
    `pass ${pass}: still failing after ${max} attempts. Last feedback:\n${feedback ?? ''}`.slice(0, 4_000),
    {
      details: { pass, attempts: max },
    },
  );
}

// One agent run of a pass, with what is left of the budgets, priced.
async function runAgent(
  input: PassInput,
  pass: Pass,
  inner: number,
  feedback: string | undefined,
  left: BudgetsLeft,
): Promise<AgentRunResult> {
  const { deps, ctx, agent, ws, criteria, runners } = input;
  const result = await agent.run({
    workdir: ws.dir,
    prompt: promptFor(ctx.job, criteria, pass, feedback, {
      memory: input.memory,
      earlierTier: pass === 'implement' && inner === 1 ? input.earlierTier : undefined,
    }),
    pass,
    attempt: inner,
    ...(feedback === undefined ? {} : { feedback }),
    ...agentRunSettings(deps, agent, runners, left, ctx.signal),
    ...(ctx.onOutput === undefined ? {} : { onOutput: (chunk: string) => ctx.onOutput?.('agent', chunk) }),
  });
  return pricedRun(result, agent, deps.settings.prices);
}

// The run in the record (a run that left the failed tree as it was counts as no change),
// its cost in the day's ledger, and a log line.
async function recordAgentRun(
  input: PassInput,
  pass: Pass,
  inner: number,
  result: AgentRunResult,
  unchanged: boolean,
): Promise<void> {
  const { deps, ctx, tracker, agent } = input;
  const now = () => (deps.now ?? (() => new Date()))();
  await tracker.update((run) =>
    addAgentRun(
      run,
      {
        pass,
        attempt: ctx.attempt,
        inner_attempt: inner,
        agent: agent.name,
        exit_code: result.exitCode,
        signal: result.signal,
        timed_out: result.timedOut,
        duration_ms: result.durationMs,
        output_tail: result.outputTail,
        changed_files: unchanged ? [] : result.changedFiles,
        outcome: unchanged && result.outcome === 'changed' ? 'no_changes' : result.outcome,
        ...(result.tokens === undefined ? {} : { tokens: result.tokens }),
        ...agentRunCosts(result, input.budget?.tier),
      },
      { now: now() },
    ),
  );
  await recordSpend(deps, ctx.job.id, result.costUsd, {
    repo: ctx.job.repo,
    agent: agent.name,
    ...(result.model === undefined ? {} : { model: result.model }),
  });
  deps.log.info(
    {
      event: 'agent.finished',
      job_id: ctx.job.id,
      pass,
      inner_attempt: inner,
      outcome: result.outcome,
      exit_code: result.exitCode,
      duration_ms: result.durationMs,
      ...(result.tokens === undefined ? {} : { tokens: result.tokens }),
      ...(result.costUsd === undefined ? {} : { cost_usd: result.costUsd }),
    },
    `agent ${result.outcome}`,
  );
}

// The agent runs that end the pass at once: no fix attempt can help with them.
async function stopForAgent(
  input: PassInput,
  pass: Pass,
  inner: number,
  result: AgentRunResult,
  limits: MoneyLimits,
  left: BudgetsLeft,
): Promise<void> {
  const { deps, ctx, tracker, agent } = input;
  if (ctx.signal.aborted)
    throw new CodefleetError('cancelled', 'the job was stopped while the agent ran', { verdict: 'transient' });
  if (result.outcome === 'timeout') {
    throw new CodefleetError(
      'agent_timeout',
      `agent ${agent.name} timed out after ${agent.timeoutMs ?? deps.settings.agentTimeoutMs} ms (pass ${pass}, attempt ${inner})`,
    );
  }
  if (result.outcome === 'error') {
    throw new CodefleetError(
      'agent_crashed',
      `agent ${agent.name} could not run: ${result.detail ?? 'unknown error'}`,
      result.permanent ? { verdict: 'permanent' } : {},
    );
  }
  // Another attempt would run with the same budget: stop as the budget says.
  if (result.budgetExceeded) throw await budgetStop(deps, agent, tracker.run, limits, left, result.detail);
}

// The pass's verification of the agent's tree, each step's result in the record.
async function verifyAttempt(input: PassInput, pass: Pass, inner: number): Promise<VerificationOutcome> {
  const { deps, ctx, tracker, ws, plan, runners } = input;
  const now = () => (deps.now ?? (() => new Date()))();
  const verified = await runVerification(ws.dir, plan.steps, {
    env: planEnv(plan, deps.settings.verifyEnv),
    timeoutMs: deps.settings.stepTimeoutMs,
    signal: ctx.signal,
    phase: pass === 'implement' ? 'build-only' : 'full',
    runner: runners.runner,
    installRunner: runners.installRunner,
    installStamp: ws.installStamp,
    ...(input.baseline === undefined ? {} : { baseline: input.baseline }),
    // Dependencies the agent left as they failed at the base fail again: not installed again.
    ...(input.baseInstallFailure?.hash === undefined
      ? {}
      : { knownInstallFailure: { hash: input.baseInstallFailure.hash, result: input.baseInstallFailure.result } }),
    formatScope: { changedFiles: () => ws.changedFiles(), restore: (files) => ws.restoreFiles(files) },
    ...(ctx.onOutput === undefined ? {} : { onOutput: ctx.onOutput }),
  });
  await tracker.update((run) =>
    verified.results.reduce(
      (acc: RunRecord, r) => addVerification(acc, verificationEntry(r, pass, ctx.attempt, inner), { now: now() }),
      run,
    ),
  );
  return verified;
}

// The failed verifications that end the pass at once: nothing the agent did or can fix.
function stopForVerification(input: PassInput, verified: VerificationOutcome): void {
  if (input.ctx.signal.aborted)
    throw new CodefleetError('cancelled', 'the job was stopped during verification', { verdict: 'transient' });
  const base = input.baseInstallFailure?.result;
  if (verified.failed?.name === 'install' && base !== undefined && base.exitCode === verified.failed.exitCode) {
    // The dependencies do not install on the base commit either: nothing the agent did.
    // Permanent: a failure independent of the agent does not go away in a retry's minutes;
    // redrive the job once the install is fixed.
    throw new CodefleetError(
      'verify_failed',
      `the dependencies cannot be installed: \`${base.command.join(' ')}\` fails on the base commit too (${installProblem(base)}); fix the install on the worker (registry, network, .npmrc) or the repository's lockfile, then redrive the job`,
      { verdict: 'permanent' },
    );
  }
  const missing = verified.failed?.spawnError === undefined ? undefined : verified.failed;
  if (missing) {
    // A checker that cannot start (not installed on this host) is nothing the agent can
    // fix: like a missing agent binary, it is worth another attempt, maybe on another host.
    throw new CodefleetError(
      'verify_failed',
      `the ${missing.name} step could not start \`${missing.command.join(' ')}\`: ${missing.spawnError ?? ''}; install ${missing.command[0] ?? 'it'} on the worker (or set the command in .codefleet.yml verify: / config.yaml verification.toolchains)`,
      { verdict: 'transient' },
    );
  }
}

/**
 * The tests and errors the failed check names that fail on the base commit too: not the
 * agent's to fix, said apart so it does not chase them.
 */
function knownFailures(failed: StepResult, baseline: Baseline | undefined): string {
  const base = baseline?.failing[stepKey(failed)];
  if (base === undefined) return '';
  const baseErrors = new Set(base.errors ?? []);
  const known = [
    ...(failed.findings?.failingTests ?? []).filter((test) => base.failingTests.includes(test)),
    ...errorSignatures(failed)
      .filter((line) => baseErrors.has(line))
      .map((line) => line.replaceAll('#', 'N')),
  ];
  if (known.length === 0) return '';
  const shown = known.slice(0, 20).join('\n- ');
  return `\n\nThese fail on the base commit too, before any change: leave them, fix the others.\n- ${shown}${known.length > 20 ? `\n(and ${known.length - 20} more)` : ''}`;
}

/**
 * The line that says why an install failed: npm's error code line before its "see the log"
 * line, pnpm's ERR_PNPM_ code, yarn berry's YN code (not YN0000, its info lines), yarn
 * classic's lockfile complaint, a manager or package that needs a newer Node.
 */
export function installProblem(result: StepResult): string {
  const lines = result.outputTail
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/complete log of this run|_logs\/|^\[codefleet\]/.test(line));
  const line =
    lines.find((l) =>
      /\b(code [A-Z0-9_]+|ERESOLVE|E404|ENOTFOUND|EAI_AGAIN|ETARGET|ERR_PNPM_\w+|YN(?!0000)\d{4}|lockfile needs to be updated|requires at least Node\.js|engine "node" is incompatible)\b/.test(
        l,
      ),
    ) ?? lines.filter((l) => /err|fail|not found/i.test(l)).at(-1);
  return (line ?? `exit ${result.exitCode ?? result.signal}`).slice(0, 300);
}

const unchangedNotice = /^You changed nothing since the last attempt[^\n]*\n\n/;

// One notice at a time, however many attempts in a row changed nothing.
function stripNotice(feedback: string | undefined): string {
  return (feedback ?? '').replace(unchangedNotice, '');
}
