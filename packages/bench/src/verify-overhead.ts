/**
 * Figure 3: codefleet's verification of a second job in a warm working copy against the
 * repository's own tools run directly in the same copy. The sample is a TypeScript project
 * with real dependencies from the npm registry (tsc, eslint with typescript-eslint, node's
 * test runner). Job 1 installs and verifies in a fresh pooled copy (not timed); job 2 gets
 * the same copy back (node_modules kept, the install skipped by its record) and changes one
 * line. Then, alternating for `rounds` rounds:
 * - codefleet: `planVerification` + `runVerification` exactly as the pipeline's test pass
 *   calls them, each step in the job's bubblewrap sandbox (`jobRunners`);
 * - codefleet without a sandbox (sandbox mode none), to show the sandbox's share;
 * - direct: the same commands the plan names, run one after another with a plain spawn in
 *   the same copy, on the host, no sandbox: what a developer would type; and once more with
 *   a new empty HOME per command, as every sandboxed run gets (npm then has no state of its
 *   own, e.g. when it last checked for a newer npm).
 * The figure is the median codefleet time over the median direct time, minus one.
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir, hostname } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '@codefleet/config';
import { jobRunners } from '@codefleet/pipeline';
import { runProcess } from '@codefleet/process';
import { openSandbox } from '@codefleet/sandbox';
import { pipelineSettings } from '@codefleet/cli';
import { createTempRepo, gitTestEnv, type TempRepo } from '@codefleet/testkit';
import {
  feedbackFor,
  planEnv,
  planVerification,
  runVerification,
  type PlannedStep,
  type StepResult,
} from '@codefleet/verify';
import { createWorkspaceManager } from '@codefleet/workspace';
import { samples, type Sample } from './samples/samples.js';
import { median } from './stats.js';

/** What figure 3 measured, in ms per full verification. */
export interface VerifyOverhead {
  sample: string;
  rounds: number;
  codefleetMs: number;
  noSandboxMs: number;
  directMs: number;
  /** Direct again, each command with a new empty HOME (what the sandbox gives every run). */
  freshHomeMs: number;
  /** One sandboxed run of `true` in the job's copy, as each step starts; and a plain spawn of it. */
  sandboxStartMs: number;
  plainStartMs: number;
  /** Per step: codefleet's median (sandboxed) and the direct median. */
  steps: { name: string; command: string; codefleetMs: number; directMs: number }[];
}

/** Runs `argv` with a plain spawn, inheriting nothing but `env`; resolves its wall time. */
function direct(argv: string[], cwd: string, env: Record<string, string>): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] ?? '', argv.slice(1), { cwd, env, stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(performance.now() - started) : reject(new Error(`${argv.join(' ')} exited ${String(code)}`)),
    );
  });
}

function manifest(sample: Sample): string {
  return `${JSON.stringify({ name: 'verify-overhead-sample', version: '1.0.0', private: true, ...sample.manifest }, null, 2)}\n`;
}

export async function measureVerifyOverhead(options: {
  root: string;
  hostEnv: Record<string, string>;
  rounds: number;
  say(line: string): void;
}): Promise<VerifyOverhead> {
  const sample = samples.find((s) => s.name.startsWith('typical')) ?? samples[0];
  if (!sample) throw new Error('no sample');
  const data = join(options.root, 'verify-data');
  const settings = {
    network: { mode: 'public', allow: [] } as const,
    readPaths: [],
    hiddenPaths: [data, homedir()],
    runRoot: join(data, 'sandbox'),
  };
  const host = { platform: process.platform, path: options.hostEnv.PATH ?? '' };
  const sandbox = await openSandbox({ mode: 'auto', ...settings }, host);
  const unsandboxed = await openSandbox({ mode: 'none', ...settings }, host);
  const gitEnv = { ...gitTestEnv(), PATH: options.hostEnv.PATH ?? '/usr/bin:/bin', HOME: options.root };
  const workspaces = createWorkspaceManager({ cacheDir: join(data, 'workspaces'), reuse: true, gitEnv });
  const config = parseConfig('', { env: {}, baseDir: options.root, hostname: hostname() }).config;
  const { verification } = config;
  const timeoutMs = verification.step_timeout_seconds * 1000;
  // The environment a worker gives verification steps, defaults included.
  const verifyEnv = pipelineSettings(config, options.hostEnv).verifyEnv;
  const npmHome = join(options.root, 'npm-home');
  let repo: TempRepo | undefined;
  try {
    repo = await createTempRepo({
      prefix: 'bench-verify-sample',
      files: { '.gitignore': 'node_modules/\ndist/\n', ...sample.files, 'package.json': manifest(sample) },
    });
    const lock = await runProcess(['npm', 'install', '--package-lock-only', '--no-audit', '--no-fund'], {
      cwd: repo.path,
      env: {
        ...options.hostEnv,
        HOME: npmHome,
        npm_config_cache: join(npmHome, 'cache'),
        npm_config_update_notifier: 'false',
      },
      timeoutMs,
    });
    if (lock.exitCode !== 0) throw new Error(`npm install --package-lock-only failed:\n${lock.outputTail}`);
    await repo.commit({}, 'lockfile');

    const verify = async (
      ws: Awaited<ReturnType<typeof workspaces.prepare>>,
      box: typeof sandbox,
    ): Promise<{ ms: number; results: StepResult[]; steps: PlannedStep[] }> => {
      const runners = jobRunners(box, ws, { protectWorkflows: true });
      const started = performance.now();
      const plan = await planVerification(ws.dir, { config: verification, env: verifyEnv });
      const outcome = await runVerification(ws.dir, plan.steps, {
        env: planEnv(plan, verifyEnv),
        timeoutMs,
        phase: 'full',
        runner: runners.runner,
        installRunner: runners.installRunner,
        installStamp: ws.installStamp,
      });
      const ms = performance.now() - started;
      if (outcome.failed) throw new Error(`verification failed in ${ws.dir}:\n${feedbackFor(outcome.failed)}`);
      return { ms, results: outcome.results, steps: plan.steps };
    };

    // As the pipeline starts a job: the install on the untouched base, whose record lets the
    // next job on this copy keep node_modules.
    const installAtBase = async (
      ws: Awaited<ReturnType<typeof workspaces.prepare>>,
    ): Promise<StepResult | undefined> => {
      const runners = jobRunners(sandbox, ws, { protectWorkflows: true });
      const plan = await planVerification(ws.dir, { config: verification, env: verifyEnv });
      const outcome = await runVerification(
        ws.dir,
        plan.steps.filter((step) => step.name === 'install'),
        {
          env: planEnv(plan, verifyEnv),
          timeoutMs,
          runner: runners.runner,
          installRunner: runners.installRunner,
          installStamp: ws.installStamp,
          installClean: true,
        },
      );
      if (outcome.failed) throw new Error(`install failed in ${ws.dir}:\n${feedbackFor(outcome.failed)}`);
      return outcome.results[0];
    };
    options.say(`  verify: job 1 installs ${sample.name} in a fresh copy and verifies it (not timed)`);
    const first = await workspaces.prepare({ jobId: 'verify-1', repoUrl: repo.path, branch: 'ai/verify-1' });
    await installAtBase(first);
    await verify(first, sandbox);
    await first.release();
    const ws = await workspaces.prepare({ jobId: 'verify-2', repoUrl: repo.path, branch: 'ai/verify-2' });
    try {
      const install = await installAtBase(ws);
      if (ws.dir !== first.dir || install?.skipped !== true)
        options.say(
          `  note: job 2 did not get job 1's installed copy back (${ws.dir}, install ${install?.skipped ? 'skipped' : 'ran'})`,
        );
      const source = join(ws.dir, sample.edit);
      await writeFile(source, `${await readFile(source, 'utf8')}\nexport const answer = 42;\n`);
      const codefleet: number[] = [];
      const noSandbox: number[] = [];
      const directRuns: number[] = [];
      const freshHome: number[] = [];
      const perStep = new Map<string, { command: string; codefleet: number[]; direct: number[] }>();
      for (let round = 0; round < options.rounds; round += 1) {
        const run = await verify(ws, sandbox);
        codefleet.push(run.ms);
        noSandbox.push((await verify(ws, unsandboxed)).ms);
        const ran = run.results.filter((r) => !r.skipped);
        let total = 0;
        const started = performance.now();
        for (const step of ran) {
          const ms = await direct(step.command, ws.dir, verifyEnv);
          total += ms;
          const entry = perStep.get(step.name) ?? { command: step.command.join(' '), codefleet: [], direct: [] };
          entry.codefleet.push(step.durationMs);
          entry.direct.push(ms);
          perStep.set(step.name, entry);
        }
        directRuns.push(performance.now() - started);
        // The same again, each command with a new empty HOME, as every sandboxed run gets one.
        const freshStarted = performance.now();
        for (const [n, step] of ran.entries()) {
          const home = join(options.root, `fresh-home-${round}-${n}`);
          await mkdir(home);
          await direct(step.command, ws.dir, { ...verifyEnv, HOME: home });
        }
        freshHome.push(performance.now() - freshStarted);
        options.say(`  verify round ${round + 1}: codefleet ${run.ms.toFixed(0)} ms, direct ${total.toFixed(0)} ms`);
      }
      // What one sandboxed step costs before the command itself: the job's view of the copy
      // rebuilt and a bubblewrap start, for `true`.
      const runners = jobRunners(sandbox, ws, { protectWorkflows: true });
      const sandboxStart: number[] = [];
      const plainStart: number[] = [];
      for (let n = 0; n < 5; n += 1) {
        const started = performance.now();
        await runners.runner(['true'], { cwd: ws.dir, env: verifyEnv, timeoutMs });
        sandboxStart.push(performance.now() - started);
        plainStart.push(await direct(['true'], ws.dir, verifyEnv));
      }
      return {
        sandboxStartMs: median(sandboxStart),
        plainStartMs: median(plainStart),
        sample: sample.name,
        rounds: options.rounds,
        codefleetMs: median(codefleet),
        noSandboxMs: median(noSandbox),
        directMs: median(directRuns),
        freshHomeMs: median(freshHome),
        steps: [...perStep].map(([name, s]) => ({
          name,
          command: s.command,
          codefleetMs: median(s.codefleet),
          directMs: median(s.direct),
        })),
      };
    } finally {
      await ws.release();
    }
  } finally {
    await repo?.dispose();
  }
}
