import { addVerification, setDodResult, type RunRecord } from '@codefleet/core';
import { planEnv, runDod, type DodOutcome, type StepResult, type VerifyPlan } from '@codefleet/verify';
import { verificationEntry, type PassInput, type PassResult } from './passes.js';
import type { RunningJob } from './running-job.js';

/** What the validating stage leaves to publishing. */
export interface Validated {
  /** The definition of done's verdict and the results of its own commands (none without them). */
  dod: DodOutcome;
  /** The working copy's fingerprint as verification passed on it: the commit must hold exactly this. */
  verified: string;
  /** Files the agent changed out of scope: left out of the commit, and said so. */
  outOfScope: string[];
}

/**
 * The validating stage: the definition of done is enforced, not optional. A job's or
 * .codefleet.yml's own commands run now; without them the DoD is the repository's
 * verification steps (those are the DoD list unless overridden), which pass 2 has just passed
 * on this very tree, so running them again would double the job's test time and show
 * nothing new. `skipped` is left for a repository with nothing to verify at all.
 */
export async function validateJob(running: RunningJob, input: PassInput, passed: PassResult): Promise<Validated> {
  await running.enter('validating', dodNote(input.plan, passed));
  const { deps, ctx, tracker, now } = running;
  const { ws, plan, runners } = input;
  const verified = await ws.fingerprint();
  const dod =
    plan.dod.length > 0
      ? await runDod(ws.dir, plan.dod, {
          env: planEnv(plan, deps.settings.verifyEnv),
          timeoutMs: deps.settings.stepTimeoutMs,
          signal: ctx.signal,
          runner: runners.runner,
          ...(ctx.onOutput === undefined ? {} : { onOutput: ctx.onOutput }),
        })
      : { result: dodWithoutCommands(plan, passed), results: [] };
  await tracker.update((r) =>
    setDodResult(
      dod.results.reduce(
        (acc: RunRecord, res) =>
          addVerification(acc, verificationEntry(res, 'test', ctx.attempt, passed.inner), { now: now() }),
        r,
      ),
      dod.result,
      { now: now() },
    ),
  );
  // chmod cannot stop an agent running as root, nor one that commits: whatever it wrote
  // out of scope stays out of the commit (Workspace.commit), and the record says so.
  const outOfScope = await ws.outOfScopeChanges();
  if (outOfScope.length > 0) {
    deps.log.warn(
      { event: 'scope.changes_left_out', job_id: ctx.job.id, files: outOfScope.slice(0, 50) },
      'out-of-scope changes left out of the commit',
    );
  }
  return { dod, verified, outOfScope };
}

/**
 * What the definition of done is, as the timeline note of `validating` says it: the DoD's
 * own commands; else, when a check could not run at the base either (it checked nothing),
 * not met; else the verification steps pass 2 passed; else nothing to run.
 */
export function dodNote(plan: VerifyPlan, passed: Pick<PassResult, 'preexisting' | 'unverifiable'>): string {
  const unchecked = named(passed.unverifiable);
  if (plan.dod.length > 0) {
    const whose = plan.source === 'job' ? "the job's" : "the repository's";
    const notChecked =
      unchecked === ''
        ? ''
        : `; not checked by ${unchecked}, which cannot run on this worker (${whyUnchecked(passed.unverifiable)})`;
    return `definition of done: ${whose} ${plan.dod.length} command(s)${notChecked}`;
  }
  if (unchecked !== '')
    return `definition of done not met: ${unchecked} cannot run on this worker (it fails the same way on the base commit without running on the code: ${whyUnchecked(passed.unverifiable)}), so the change was not checked by it`;
  const checks = verificationChecks(plan);
  if (checks.length === 0)
    return 'definition of done: nothing to run (no DoD commands, no verification steps detected)';
  const known = named(passed.preexisting);
  const steps = [...new Set(checks.map((step) => step.name))].join(', ');
  return `definition of done: the verification steps pass 2 passed (${steps})${known === '' ? '' : `, but for what fails on the base commit too: ${known}`}`;
}

// The DoD's verdict without commands of its own: a check that could not run on this worker
// means the job cannot claim its definition of done (a draft PR says why).
function dodWithoutCommands(plan: VerifyPlan, passed: Pick<PassResult, 'unverifiable'>): DodOutcome['result'] {
  if (passed.unverifiable.length > 0) return 'failed';
  return verificationChecks(plan).length > 0 ? 'passed' : 'skipped';
}

// The verification steps that check the change (installing checks nothing).
function verificationChecks(plan: VerifyPlan): VerifyPlan['steps'] {
  return plan.steps.filter((step) => step.name !== 'install');
}

function named(steps: readonly StepResult[]): string {
  return steps.map((step) => `${step.name} (\`${step.command.join(' ')}\`)`).join(', ');
}

// Why each check that ran on nothing could not run: the line of its output that says so
// (repository output: one line, bounded, and escaped where the note is rendered).
function whyUnchecked(steps: readonly StepResult[]): string {
  return steps
    .map((step) => `${step.name}: ${(step.unverifiableReason ?? 'no output').replace(/\s+/g, ' ').slice(0, 200)}`)
    .join('; ');
}
