import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  classifyTests,
  formatSuite,
  parseEvalConfig,
  parseSuite,
  runEvaluation,
  evalJobId,
  type Instance,
  type RunStatuses,
  type ValidationRuns,
} from '@codefleet/eval';
import type { RunRecord } from '@codefleet/core';
import { dirRunner } from '@codefleet/pipeline';
import { runProcess, type ProcessRunner } from '@codefleet/process';
import {
  listingTestCommand,
  planEnv,
  planVerification,
  runVerification,
  TestStatusScanner,
  type VerifyPlan,
} from '@codefleet/verify';
import type { Io } from '../program/context.js';
import { pipelineSettings } from '../pipeline-deps.js';
import { gitEnvFrom, type Runtime } from '../runtime.js';
import { normalizeRepo } from './jobs.js';

/** Options of `codefleet eval validate`. */
export interface EvalValidateCliOptions {
  suite: string;
  out: string;
  /** A local clone of the repository the runs check out from (default: each instance's repo). */
  repo: string;
  instance?: string[];
  /** Skip the oracle and empty jobs (no worker needed): the tests alone decide. */
  oracle?: boolean;
  maxPerRepo?: number;
}

/** Where an instance's runs check its base commit out. */
const checkoutDir = (root: string, instance: Instance) =>
  join(root, createHash('sha256').update(instance.instance_id).digest('hex').slice(0, 16));

/** What one instance's runs need: where, with what, and in which sandbox. */
interface Checks {
  runner: ProcessRunner;
  settings: ReturnType<typeof pipelineSettings>;
  gitEnv: Record<string, string>;
  workRoot: string;
}

const git = async (checks: Checks, dir: string, args: string[]) => {
  const run = await runProcess(['git', ...args], { cwd: dir, env: checks.gitEnv, timeoutMs: 600_000 });
  if (run.exitCode !== 0)
    throw new Error(`git ${args[0]}: ${run.spawnError ?? run.outputTail.trim().split('\n').at(-1) ?? ''}`);
};

// Runs the plan's install, build and test steps (the test step listing each test) and reads
// each test's outcome, and what its last check printed: why, when no test was reported.
async function testRun(checks: Checks, dir: string, plan: VerifyPlan): Promise<RunStatuses & { said: string }> {
  const scanner = new TestStatusScanner();
  const steps = plan.steps
    .filter((step) => step.name === 'install' || step.name === 'build' || step.name === 'test')
    .map((step) =>
      step.name === 'test' ? { ...step, command: listingTestCommand(step, plan) ?? step.command } : step,
    );
  const verified = await runVerification(dir, steps, {
    env: planEnv(plan, checks.settings.verifyEnv),
    timeoutMs: checks.settings.stepTimeoutMs,
    runner: checks.runner,
    installRunner: checks.runner,
    onOutput: (step, chunk) => {
      if (step === 'test') scanner.write(chunk);
    },
  });
  const last = verified.results.at(-1);
  const tail = last?.spawnError ?? last?.outputTail.trim().split('\n').at(-1) ?? 'no output';
  return {
    ...scanner.end(),
    said: `${last?.name ?? 'the checks'} (${last?.command.join(' ') ?? ''}) said: ${tail.slice(0, 200)}`,
  };
}

/**
 * The four runs of an instance in a checkout of its base commit: as it is, with the tests, with
 * the fix too, and that once more (what changes between the last two is flaky). Throws saying
 * which patch did not apply, or that the tests cannot be listed one by one.
 */
async function runsOf(
  checks: Checks,
  source: string,
  instance: Instance,
): Promise<{ runs: ValidationRuns; plan: VerifyPlan }> {
  const dir = checkoutDir(checks.workRoot, instance);
  await rm(dir, { recursive: true, force: true });
  try {
    await git(checks, checks.workRoot, ['clone', '--quiet', '--no-checkout', '--', source, dir]);
    await git(checks, dir, ['checkout', '--quiet', '--detach', instance.base_commit]);
    const plan = await planVerification(dir, { config: checks.settings.verification, env: checks.settings.verifyEnv });
    const test = plan.steps.find((step) => step.name === 'test');
    if (test === undefined) throw new Error('no test step is planned for this repository');
    if (listingTestCommand(test, plan) === undefined)
      throw new Error(`the test step (${test.command.join(' ')}) cannot list its tests one by one`);
    const base = await testRun(checks, dir, plan);
    await applyPatch(checks, dir, instance.test_patch, 'the tests');
    const withTests = await testRun(checks, dir, plan);
    await applyPatch(checks, dir, instance.patch, 'the fix');
    const withFix = await testRun(checks, dir, plan);
    // The base may have no test yet; with the fix, a run that reports none did not run (the
    // runner missing from the sandbox, a collection error): that says why.
    if (withFix.passed.length + withFix.failed.length + withFix.skipped.length === 0)
      throw new Error(`no test was reported with the fix: ${withFix.said}`);
    const withFixAgain = await testRun(checks, dir, plan);
    return { runs: { base, withTests, withFix, withFixAgain }, plan };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function applyPatch(checks: Checks, dir: string, patch: string, what: string): Promise<void> {
  const file = `${dir}.patch`;
  await writeFile(file, patch);
  try {
    await git(checks, dir, ['apply', '--whitespace=nowarn', file]);
  } catch (error) {
    throw new Error(`${what} do not apply at the base commit: ${(error as Error).message}`);
  } finally {
    await rm(file, { force: true });
  }
}

/** The digest of what a plan runs: which checks the test lists were taken under. */
function planDigest(plan: VerifyPlan): string {
  return createHash('sha256')
    .update(JSON.stringify({ toolchain: plan.toolchain, steps: plan.steps }))
    .digest('hex');
}

/**
 * `codefleet eval validate`: keeps the instances that are real (see classifyTests), with their
 * test lists set, and with the oracle resolved and an empty agent not, through the fleet's own
 * pipeline; writes them to `--out` and says why each other one was rejected.
 */
export async function evalValidate(rt: Runtime, options: EvalValidateCliOptions, io: Io): Promise<number> {
  const suite = parseSuite(await readFile(resolve(io.cwd, options.suite), 'utf8'));
  const only = options.instance === undefined ? undefined : new Set(options.instance);
  const picked = suite.instances.filter((i) => only === undefined || only.has(i.instance_id));
  const workRoot = join(rt.config.data_dir, 'eval', 'checkouts');
  await mkdir(workRoot, { recursive: true });
  const toolsDir = join(rt.config.data_dir, 'eval', 'tools');
  await mkdir(toolsDir, { recursive: true });
  const source = normalizeRepo(options.repo, io.cwd);
  const rejected: Record<string, string[]> = {};
  const reject = (id: string, reason: string) => {
    rejected[reason] = [...(rejected[reason] ?? []), id];
    io.err(`eval validate: ${id} rejected: ${reason}`);
  };
  const kept: Instance[] = [];
  for (const [index, instance] of picked.entries()) {
    const checks: Checks = {
      runner: dirRunner(await rt.sandbox(), checkoutDir(workRoot, instance), toolsDir),
      settings: pipelineSettings(rt.config, rt.loaded.env),
      gitEnv: { ...gitEnvFrom(rt.loaded.env), PATH: rt.loaded.env.PATH ?? '' },
      workRoot,
    };
    io.err(`eval validate: ${index + 1} of ${picked.length}: ${instance.instance_id}`);
    try {
      const { runs, plan } = await runsOf(checks, source, instance);
      const classified = classifyTests(runs);
      if ('rejected' in classified) reject(instance.instance_id, classified.rejected);
      else kept.push({ ...instance, ...classified.lists, plan_digest: planDigest(plan) });
    } catch (error) {
      reject(instance.instance_id, (error as Error).message.split('\n')[0] ?? 'failed');
    }
  }
  const valid = options.oracle === false ? kept : await throughPipeline(rt, kept, options, io, reject);
  await writeFile(resolve(io.cwd, options.out), formatSuite(valid));
  const reasons = Object.entries(rejected).map(([reason, ids]) => `${ids.length} ${reason}`);
  io.out(
    `eval validate: ${valid.length} of ${picked.length} valid${reasons.length === 0 ? '' : `; rejected: ${reasons.join('; ')}`}`,
  );
  return 0;
}

// The oracle and an empty agent as jobs through the real pipeline: an instance stays only when
// the oracle is resolved and the empty agent is not.
async function throughPipeline(
  rt: Runtime,
  kept: Instance[],
  options: EvalValidateCliOptions,
  io: Io,
  reject: (id: string, reason: string) => void,
): Promise<Instance[]> {
  if (kept.length === 0) return kept;
  const text = formatSuite(kept);
  const suite = parseSuite(text);
  const configs = [parseEvalConfig('oracle'), parseEvalConfig('empty')];
  const tasks = suite.instances.flatMap((instance) => configs.map((config) => ({ instance, config, trial: 1 })));
  io.err(`eval validate: the oracle and an empty agent through the fleet (${tasks.length} jobs)`);
  await runEvaluation(
    {
      enqueue: (job) => rt.queue.enqueue(job),
      getRun: (id) => rt.store.get(id),
      deadLetters: () => rt.queue.deadLetters({ limit: 1_000 }),
    },
    {
      digest: suite.digest,
      tasks,
      requestedBy: 'eval-validate',
      repo: normalizeRepo(options.repo, io.cwd),
      ...(options.maxPerRepo === undefined ? {} : { maxPerRepo: options.maxPerRepo }),
    },
  );
  const valid: Instance[] = [];
  for (const instance of suite.instances) {
    const [oracle, empty] = await Promise.all(
      configs.map((config) => rt.store.get(evalJobId(suite.digest, { instance, config, trial: 1 }))),
    );
    if (oracle?.grade?.resolved !== true)
      reject(instance.instance_id, `the oracle is not resolved (${whyNot(oracle)})`);
    else if (empty?.grade?.resolved === true) reject(instance.instance_id, 'an empty agent is resolved');
    else valid.push(instance);
  }
  return valid;
}

/**
 * Why the oracle's run is not resolved, in a line. Its fix failing the repository's own checks
 * is the common case: the task's tests change tests the fix breaks, so the fix alone never
 * passes verification (an agent would have to change those tests too).
 */
function whyNot(run: RunRecord | undefined): string {
  if (run === undefined) return 'no run';
  if (run.grade !== undefined) return run.grade.reason;
  const failed = [...run.verification].reverse().find((check) => !check.passed && check.preexisting !== true);
  if (run.outcome !== 'succeeded' && failed !== undefined)
    return `the fix alone fails the ${failed.step} step (${failed.command.join(' ')}): the task's tests change tests it breaks`;
  return run.error?.message ?? `ended ${run.outcome ?? 'unfinished'}`;
}
