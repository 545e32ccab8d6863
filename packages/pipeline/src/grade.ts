import { finish, setGrade, type Grade, type Job } from '@codefleet/core';
import { applyPatch, parsePatch, patchSucceeded } from '@codefleet/patch';
import { runProcess } from '@codefleet/process';
import {
  listingTestCommand,
  planEnv,
  runVerification,
  TestStatusScanner,
  type StepResult,
  type TestStatuses,
  type VerifyPlan,
} from '@codefleet/verify';
import type { PassInput } from './passes.js';
import { verifiedChanges } from './publish.js';
import type { JobResult, Prepared, RunningJob } from './running-job.js';
import type { Validated } from './validate.js';
import { dirRunner } from './sandboxed.js';

/** Names kept per list of the grade (the run record's bound). */
const maxNames = 2000;

/**
 * Grades the change with the job's hidden tests, once the agent's last attempt is over and
 * its tree verified: the files are copied where no agent ever runs (the workspace's grading
 * copy, without git), the tests applied there, the build and test steps run in the job's
 * sandbox, and the verdict recorded as the run's grade. The working copy never holds the
 * tests, so nothing published or shown to a later agent of this copy does.
 */
export async function gradeJob(running: RunningJob, input: PassInput, validated: Validated): Promise<void> {
  const hidden = running.ctx.job.hidden_tests;
  if (hidden === undefined) return;
  const { deps, ctx, tracker, now } = running;
  // Nothing to grade without a change, and only the tree verification passed on is graded.
  await verifiedChanges(input.ws, validated);
  const started = Date.now();
  const copy = await input.ws.gradingCopy();
  try {
    const applied = await applyHidden(copy.dir, hidden.patch, {
      env: deps.settings.verifyEnv,
      gitPath: deps.settings.gitPath ?? 'git',
      signal: ctx.signal,
    });
    const grade =
      applied === undefined
        ? await runGrade(running, input, copy.dir, hidden.tests)
        : { resolved: false, reason: `the hidden tests did not apply: ${applied}`, checks: [] };
    await tracker.update((r) => setGrade(r, { ...grade, duration_ms: Date.now() - started }, { now: now() }));
    deps.log.info(
      { event: 'job.graded', job_id: ctx.job.id, resolved: grade.resolved },
      grade.resolved ? 'hidden tests passed' : 'hidden tests did not pass',
    );
  } finally {
    await copy.remove();
  }
}

// Applies the tests' patch with the patch engine; the error, or undefined. The copy gets an
// empty repository of its own first: the engine's `git apply` must not find one above it.
async function applyHidden(
  dir: string,
  patch: string,
  options: { env: Record<string, string>; gitPath: string; signal: AbortSignal },
): Promise<string | undefined> {
  const { env, gitPath, signal } = options;
  const init = await runProcess([gitPath, 'init', '-q', dir], { cwd: dir, env, timeoutMs: 30_000, signal });
  if (init.exitCode !== 0) return `git init failed: ${init.spawnError ?? init.outputTail.trim()}`;
  let parsed;
  try {
    parsed = parsePatch(patch);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  const result = await applyPatch(parsed.commands, {
    root: dir,
    env,
    gitPath,
    protected: { patterns: [] },
    onError: 'stop',
  });
  if (patchSucceeded(parsed, result)) return undefined;
  return result.results.find((r) => r.error !== undefined)?.error ?? result.summary;
}

// The build and test steps (no install: the copy holds the installed dependencies; no
// format or lint: they judge style, not behaviour), the test step listing each test.
function gradeSteps(plan: VerifyPlan): VerifyPlan['steps'] {
  return plan.steps
    .filter((step) => step.name === 'build' || step.name === 'test')
    .map((step) =>
      step.name === 'test' ? { ...step, command: listingTestCommand(step, plan) ?? step.command } : step,
    );
}

async function runGrade(
  running: RunningJob,
  input: PassInput,
  dir: string,
  named: readonly string[] | undefined,
): Promise<Omit<Grade, 'duration_ms'>> {
  const { deps, ctx } = running;
  const runner = dirRunner(deps.sandbox, dir, input.ws.toolsDir);
  // Read as it streams: the scanner keeps names, not the output (bounded however long it is).
  const scanner = new TestStatusScanner();
  const verified = await runVerification(dir, gradeSteps(input.plan), {
    env: planEnv(input.plan, deps.settings.verifyEnv),
    timeoutMs: deps.settings.stepTimeoutMs,
    signal: ctx.signal,
    runner,
    installRunner: runner,
    onOutput: (step, chunk) => {
      if (step === 'test') scanner.write(chunk);
    },
  });
  const checks = verified.results.filter((r) => !r.skipped).map(checkOf);
  const failedCheck = verified.results.find((r) => !r.passed && !r.skipped);
  if (named === undefined || named.length === 0) {
    return failedCheck === undefined
      ? { resolved: true, reason: 'every check passed', checks }
      : { resolved: false, reason: `${failedCheck.name} failed (exit ${failedCheck.exitCode ?? 'none'})`, checks };
  }
  return { ...judgeNamed(scanner.end(), named, failedCheck), checks };
}

// Named tests decide: each must have passed. A check that failed before the tests ran shows as them missing.
function judgeNamed(
  statuses: TestStatuses,
  named: readonly string[],
  failedCheck: StepResult | undefined,
): Omit<Grade, 'duration_ms' | 'checks'> {
  const passed = new Set(statuses.passed);
  const seen = new Set([...statuses.passed, ...statuses.failed, ...statuses.skipped]);
  const notPassed = named.filter((name) => !passed.has(name));
  const missing = named.filter((name) => !seen.has(name));
  const lists = { passed: statuses.passed, failed: statuses.failed, skipped: statuses.skipped, missing };
  const omitted = Object.values(lists).reduce((sum, list) => sum + Math.max(0, list.length - maxNames), 0);
  const tests = {
    passed: lists.passed.slice(0, maxNames),
    failed: lists.failed.slice(0, maxNames),
    skipped: lists.skipped.slice(0, maxNames),
    missing: missing.slice(0, maxNames),
    omitted,
  };
  if (notPassed.length === 0) return { resolved: true, reason: `all ${named.length} named tests passed`, tests };
  const shown = notPassed
    .slice(0, 5)
    .map((name) => `${name} (${missing.includes(name) ? 'not run' : 'not passed'})`)
    .join(', ');
  const before = failedCheck?.name === 'build' ? '; the build failed' : '';
  return {
    resolved: false,
    reason: `${notPassed.length} of ${named.length} named tests did not pass${before}: ${shown}`.slice(0, 2000),
    tests,
  };
}

function checkOf(result: StepResult): Grade['checks'][number] {
  return {
    step: result.name,
    command: result.command,
    exit_code: result.exitCode,
    timed_out: result.timedOut,
    duration_ms: result.durationMs,
    passed: result.passed,
    output_tail: result.outputTail,
  };
}

/** Whether `job`'s run ends after grading, publishing nothing: an evaluation's. */
export function gradedOnly(job: Pick<Job, 'source'>): boolean {
  return job.source.kind === 'eval';
}

/**
 * Ends a graded-only run: its outcome is the definition of done's, as publishing would have
 * made it, and nothing leaves the worker (no push, no pull request, no report).
 */
export async function finishUnpublished(
  running: RunningJob,
  prepared: Prepared,
  validated: Validated,
): Promise<JobResult> {
  const { tracker, now, ctx } = running;
  await verifiedChanges(prepared.ws, validated);
  // Through publishing, as every run that ends done: here it publishes nothing.
  await running.enter('publishing', 'an evaluation: graded, nothing is published');
  const { result } = validated.dod;
  const outcome = result === 'passed' || result === 'skipped' ? 'succeeded' : 'dod_failed';
  await tracker.update((r) => finish(r, outcome, { now: now(), dodResult: result }));
  ctx.onProgress?.({ stage: 'done' });
  return { action: 'ack', run: tracker.run };
}
