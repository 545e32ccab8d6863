import {
  isStale,
  planEnv,
  planKey,
  readBaseline,
  runBaseline,
  toolStamp,
  writeBaseline,
  type Baseline,
  type PlannedStep,
} from '@codefleet/verify';
import type { PipelineSettings } from './deps.js';
import type { PassInput } from './passes.js';

/**
 * What on this host shapes the results of `steps` beyond the steps themselves: the sandbox's
 * settings, the step timeout (a check that timed out under a shorter one says nothing now)
 * and the programs they run (see toolStamp). Part of every cache key of results at a base.
 */
export async function hostKey(
  settings: Pick<PipelineSettings, 'environmentKey' | 'stepTimeoutMs'>,
  steps: readonly PlannedStep[],
  env: Readonly<Record<string, string>>,
): Promise<string> {
  return `${settings.environmentKey ?? ''}\n${settings.stepTimeoutMs}\n${await toolStamp(steps, env.PATH)}`;
}

/**
 * The base commit's verification under this job's plan: read from the repository's cache,
 * or run now on the untouched copy (before any agent) and cached for every later job on
 * the same base commit and plan. `undefined` when baselines are off, there is nothing to
 * compare, or the copy no longer holds the base (a retry resumed an earlier attempt's work
 * and nothing is cached): then every failure counts against the change, as before.
 *
 * Whatever the checks wrote that would count as a change (an untracked report file) is put
 * back, so the agent starts from the base.
 */
export async function baselineFor(input: PassInput): Promise<Baseline | undefined> {
  const { deps, ctx, ws, plan, runners } = input;
  if (deps.settings.verification.baseline === false) return undefined;
  if (!plan.steps.some((step) => step.name !== 'install' && step.name !== 'format')) return undefined;
  const env = planEnv(plan, deps.settings.verifyEnv);
  const file = ws.baselineFile(planKey(plan.steps, env, await hostKey(deps.settings, plan.steps, env)));
  const now = (deps.now ?? (() => new Date()))();
  const cached = await readBaseline(file);
  if (cached !== undefined && !isStale(cached, now)) return cached;
  if (ws.startSha !== ws.baseSha || (await ws.changedFiles()).length > 0) return undefined;
  const { baseline, results } = await runBaseline(ws.dir, plan.steps, {
    env,
    timeoutMs: deps.settings.stepTimeoutMs,
    signal: ctx.signal,
    now,
    runner: runners.runner,
    installRunner: runners.installRunner,
    installStamp: ws.installStamp,
    // Named apart: the base commit's checks are not the change's.
    ...(ctx.onOutput === undefined
      ? {}
      : { onOutput: (source: string, chunk: string) => ctx.onOutput?.(`baseline ${source}`, chunk) }),
  });
  const left = await ws.changedFiles();
  if (left.length > 0) await ws.restoreFiles(left);
  await writeBaseline(file, baseline);
  const failing = results.filter((result) => !result.passed);
  // Those that did not run on the code there: they will judge nothing (unverifiable).
  const notRun = Object.entries(baseline.failing)
    .filter(([, failure]) => failure.unavailable !== undefined)
    .map(([key, failure]) => `${key}: ${failure.unavailable ?? ''}`);
  deps.log.info(
    {
      event: 'verify.baseline',
      job_id: ctx.job.id,
      base_sha: ws.baseSha,
      checks: results.length,
      failing: failing.map((result) => `${result.name}: ${result.command.join(' ')}`),
      not_run: notRun,
    },
    failing.length === 0
      ? 'the base commit passes every check'
      : `${failing.length} check(s) fail on the base commit already (${notRun.length} without running on the code): they will not be held against the change`,
  );
  return baseline;
}
