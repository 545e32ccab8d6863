/**
 * What the second-job bench (second-job.ts) shares with its leftover probes (leftovers.ts):
 * the worker's parts, set up as the runtime sets them up, in one temp directory, and a job
 * that runs as the pipeline's pass 1 does: prepare, plan, the runs of the job (the agent's
 * stand-in), then the install step.
 */
import { join } from 'node:path';
import { homedir, hostname } from 'node:os';
import { buildAgentEnv } from '@codefleet/agents';
import { parseConfig, type VerificationConfig } from '@codefleet/config';
import { jobRunners, type JobRunners } from '@codefleet/pipeline';
import { runProcess, type ProcessResult } from '@codefleet/process';
import { openSandbox, type Sandbox } from '@codefleet/sandbox';
import { createTempRepo, gitTestEnv, type TempDir, type TempRepo } from '@codefleet/testkit';
import { feedbackFor, planVerification, runVerification, type StepResult } from '@codefleet/verify';
import { createWorkspaceManager, type Workspace, type WorkspaceManager } from '@codefleet/workspace';

/** The worker's parts, opened once. */
export interface Worker {
  sandbox: Sandbox;
  workspaces: WorkspaceManager;
  /** What verification steps get (the runtime's `buildAgentEnv` of the worker's environment). */
  verifyEnv: Record<string, string>;
  /** The environment of the bench's own npm calls outside the sandbox (lockfiles). */
  hostNpmEnv: Record<string, string>;
  /** The default `verification:` config. */
  verification: VerificationConfig;
  timeoutMs: number;
  /** The repositories made for the bench, each in a temp dir of its own: disposed at the end. */
  repos: TempRepo[];
}

/** One job, up to its install step (passed or not), with the time of each phase. */
export interface BenchJob {
  ws: Workspace;
  runners: JobRunners;
  prepareMs: number;
  planMs: number;
  installMs: number;
  install: StepResult;
}

/**
 * Opens the worker's parts under `root` as the runtime does: a data directory holding the
 * working-copy cache and the sandbox's run root, hidden from runs with the real HOME.
 */
export async function openWorker(root: TempDir): Promise<Worker> {
  // Without what `npm run bench` itself injected (npm_config_*, npm_lifecycle_*).
  const hostEnv = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && !/^npm_/i.test(entry[0]),
    ),
  );
  const data = join(root.path, 'data');
  const sandbox = await openSandbox(
    {
      mode: 'auto',
      network: { mode: 'public', allow: [] },
      readPaths: [],
      hiddenPaths: [data, homedir()],
      runRoot: join(data, 'sandbox'),
    },
    { platform: process.platform, path: hostEnv.PATH ?? '' },
  );
  const gitEnv = { ...gitTestEnv(), PATH: hostEnv.PATH ?? '/usr/bin:/bin', HOME: root.path };
  const workspaces = createWorkspaceManager({ cacheDir: join(data, 'workspaces'), reuse: true, gitEnv });
  // A HOME of its own: the user's ~/.npmrc could leave `resolved` out of the lockfiles.
  const npmHome = join(root.path, 'npm-home');
  const hostNpmEnv = {
    ...hostEnv,
    HOME: npmHome,
    npm_config_cache: join(npmHome, 'cache'),
    npm_config_update_notifier: 'false',
  };
  const { verification } = parseConfig('', { env: {}, baseDir: root.path, hostname: hostname() }).config;
  return {
    sandbox,
    workspaces,
    verifyEnv: buildAgentEnv(hostEnv),
    hostNpmEnv,
    verification,
    timeoutMs: verification.step_timeout_seconds * 1000,
    repos: [],
  };
}

/** A repository of `files` whose lockfile npm resolves now (not timed), committed with them. */
export async function createNpmRepo(worker: Worker, prefix: string, files: Record<string, string>): Promise<TempRepo> {
  const repo = await createTempRepo({
    prefix,
    files: { '.gitignore': 'node_modules/\ndist/\n.venv/\ntarget/\n', ...files },
  });
  worker.repos.push(repo);
  if (files['package-lock.json'] === undefined) await lockAndCommit(worker, repo, 'lockfile');
  return repo;
}

/** Resolves the repository's lockfile again after a manifest change and commits both. */
export async function lockAndCommit(worker: Worker, repo: TempRepo, message: string): Promise<void> {
  const lock = await runProcess(['npm', 'install', '--package-lock-only', '--no-audit', '--no-fund'], {
    cwd: repo.path,
    env: worker.hostNpmEnv,
    timeoutMs: worker.timeoutMs,
  });
  if (lock.exitCode !== 0)
    throw new Error(`npm install --package-lock-only failed in ${repo.path}:\n${lock.outputTail}`);
  await repo.commit({}, message);
}

/**
 * Runs one job on `repo` as pass 1 does: prepare (mirror sync, pool slot, reset), plan,
 * `beforeInstall` (what the agent does; not timed), then the install step alone, through
 * the job's install runner in the sandbox.
 */
export async function runBenchJob(
  worker: Worker,
  repo: TempRepo,
  jobId: string,
  beforeInstall?: (ws: Workspace, runners: JobRunners) => Promise<void>,
): Promise<BenchJob> {
  let started = performance.now();
  const ws = await worker.workspaces.prepare({
    jobId,
    repoUrl: repo.path,
    branch: `ai/${jobId}`,
    context: { '.codefleet/task.md': `# ${jobId}\n` },
  });
  const prepareMs = performance.now() - started;
  started = performance.now();
  const plan = await planVerification(ws.dir, { config: worker.verification });
  const planMs = performance.now() - started;
  const steps = plan.steps.filter((step) => step.name === 'install');
  if (steps.length === 0) throw new Error(`${jobId}: no install step planned in ${ws.dir}`);
  const runners = jobRunners(worker.sandbox, ws, { protectWorkflows: true });
  if (beforeInstall) await beforeInstall(ws, runners);
  started = performance.now();
  const outcome = await runVerification(ws.dir, steps, {
    env: worker.verifyEnv,
    timeoutMs: worker.timeoutMs,
    phase: 'build-only',
    runner: runners.runner,
    installRunner: runners.installRunner,
  });
  const installMs = performance.now() - started;
  const [install] = outcome.results;
  if (install === undefined) throw new Error(`${jobId}: the install step left no result`);
  return { ws, runners, prepareMs, planMs, installMs, install };
}

/** `job`, when its install passed; else the bench cannot go on: throws with the step's feedback. */
export function passed(job: BenchJob, label: string): BenchJob {
  if (!job.install.passed) throw new Error(`${label}: install failed:\n${feedbackFor(job.install)}`);
  return job;
}

/** Runs `argv` through `runner` in the job's copy. */
export function runIn(
  job: Pick<BenchJob, 'ws'>,
  runner: JobRunners['runner'],
  worker: Worker,
  argv: string[],
): Promise<ProcessResult> {
  return runner(argv, { cwd: job.ws.dir, env: worker.verifyEnv, timeoutMs: 60_000 });
}

// Writes each `path=content` argument (relative to the copy), making its directories.
const writeScript = `
const { mkdirSync, writeFileSync } = require('node:fs');
const { dirname } = require('node:path');
for (const arg of process.argv.slice(1)) {
  const at = arg.indexOf('=');
  mkdirSync(dirname(arg.slice(0, at)), { recursive: true });
  writeFileSync(arg.slice(0, at), arg.slice(at + 1));
}
`;

/** Writes `files` (relative path → content) into the job's copy from a run through `runner`. */
export function writeFromRun(
  job: Pick<BenchJob, 'ws'>,
  runner: JobRunners['runner'],
  worker: Worker,
  files: Record<string, string>,
): Promise<ProcessResult> {
  return runIn(job, runner, worker, [
    'node',
    '-e',
    writeScript,
    ...Object.entries(files).map(([path, content]) => `${path}=${content}`),
  ]);
}

/** A run's outcome in a few words: `exit 0`, or the exit code and the first line of its output. */
export function outcomeOf(result: ProcessResult): string {
  const firstLine = (result.spawnError ?? result.outputTail)
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line !== '');
  return result.exitCode === 0
    ? 'exit 0'
    : `exit ${String(result.exitCode)}${firstLine === undefined ? '' : `: ${firstLine}`}`;
}

/** Milliseconds as the bench prints them. */
export const shown = (ms: number) => (ms >= 1_000 ? `${(ms / 1_000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
