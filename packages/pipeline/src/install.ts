import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import {
  dependencyHash,
  isStale,
  planEnv,
  planKey,
  provideManager,
  runVerification,
  type StepResult,
} from '@codefleet/verify';
import { hostKey } from './baseline.js';
import type { PassInput } from './passes.js';

/** The install on the base when it failed, and the dependency hash it failed with. */
export interface BaseInstallFailure {
  result: StepResult;
  /** The dependencies it failed for: the same ones later fail the same way, unrun. */
  hash?: string;
}

// A remembered failure is tried again after this: the registry may have been down.
const rememberMs = 60 * 60 * 1000;

/**
 * Makes the plan's package manager runnable (pnpm, yarn, bun; npm is the host's): fetched
 * once on the host into the workspace's tools directory, which runs see read-only, and put
 * in front of the plan's PATH with the settings it needs to reach the registry.
 *
 * @throws {CodefleetError} `verify_failed` when it cannot be fetched (see `provideManager`).
 */
export async function providePackageManager(input: PassInput): Promise<void> {
  const { deps, ctx, ws, plan } = input;
  const manager = plan.packageManager;
  if (manager === undefined) return;
  const commands = [...plan.steps.map((step) => step.command), ...plan.dod];
  if (!commands.some((command) => command[0] === manager.name)) return;
  const provided = await provideManager(manager, {
    toolsDir: ws.toolsDir,
    env: deps.settings.verifyEnv,
    timeoutMs: deps.settings.stepTimeoutMs,
    signal: ctx.signal,
  });
  if (provided === undefined) return;
  plan.env.PATH = plan.env.PATH === undefined ? provided.binDir : `${provided.binDir}:${plan.env.PATH}`;
  for (const [name, value] of Object.entries(provided.env)) plan.env[name] ??= value;
  deps.log.info(
    { event: 'verify.package_manager', job_id: ctx.job.id, package: provided.spec },
    `${manager.name} provided for the runs`,
  );
}

/**
 * Installs the dependencies on the job's base, before any agent run, when the copy does not
 * hold a matching install already: the only install whose result a pooled copy keeps for the
 * next job, since no file an agent wrote (one a lifecycle script runs) can have shaped it.
 * Best effort: a failure here is not the agent's; the passes install again, and the same
 * failure there ends the job as an environment problem instead of feedback. Resolves that
 * failure, if any.
 *
 * A failure at the base commit is remembered (beside its baselines, for an hour): later jobs
 * on the same commit and plan do not spend the install's minutes to fail again, they take it.
 */
export async function installAtBase(input: PassInput): Promise<BaseInstallFailure | undefined> {
  const { deps, ctx, ws, plan, runners } = input;
  const install = plan.steps.filter((step) => step.name === 'install');
  if (install.length === 0) return undefined;
  const env = planEnv(plan, deps.settings.verifyEnv);
  const atBase = ws.startSha === ws.baseSha;
  const memo = ws.baselineFile(`install-${planKey(install, env, await hostKey(deps.settings, install, env))}`);
  const now = (deps.now ?? (() => new Date()))();
  const remembered = atBase ? await readFailure(memo, now) : undefined;
  if (remembered !== undefined) {
    deps.log.info(
      { event: 'install.remembered_failure', job_id: ctx.job.id, base_sha: ws.baseSha },
      'the install failed on this base commit before: not run again',
    );
    return remembered;
  }
  const result = await runVerification(ws.dir, install, {
    env,
    timeoutMs: deps.settings.stepTimeoutMs,
    signal: ctx.signal,
    runner: runners.runner,
    installRunner: runners.installRunner,
    installStamp: ws.installStamp,
    // A retry starts from the work branch, which holds an earlier attempt's (the agent's) files.
    installClean: atBase,
    ...(ctx.onOutput === undefined ? {} : { onOutput: ctx.onOutput }),
  });
  const step = result.results[0];
  if (step !== undefined && !step.skipped) {
    deps.log.info(
      { event: 'install.at_base', job_id: ctx.job.id, passed: step.passed, duration_ms: step.durationMs },
      'dependencies installed on the base',
    );
  }
  // Only from the base itself: a retry's copy holds the agent's files, which may be the cause.
  if (step === undefined || step.passed || !atBase) return undefined;
  const hash = await dependencyHash(ws.dir);
  const failure: BaseInstallFailure = hash === undefined ? { result: step } : { result: step, hash };
  await writeFailure(memo, failure, now).catch(() => undefined);
  return failure;
}

async function readFailure(file: string, now: Date): Promise<BaseInstallFailure | undefined> {
  try {
    const saved = JSON.parse(await readFile(file, 'utf8')) as { at?: string; result?: StepResult; hash?: string };
    if (
      typeof saved.at !== 'string' ||
      saved.result?.name !== 'install' ||
      isStale({ failing: {}, ran: [], at: saved.at }, now, rememberMs)
    )
      return undefined;
    return typeof saved.hash === 'string' ? { result: saved.result, hash: saved.hash } : { result: saved.result };
  } catch {
    return undefined;
  }
}

async function writeFailure(file: string, failure: BaseInstallFailure, now: Date): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temp, JSON.stringify({ at: now.toISOString(), ...failure }), { flag: 'wx' });
    await rename(temp, file);
  } finally {
    await rm(temp, { force: true });
  }
}
