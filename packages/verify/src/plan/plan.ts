import type { VerificationConfig } from '@codefleet/config';
import { findExecutable } from '@codefleet/process';
import { stepOrder, type PlannedStep, type VerifyPlan } from '../types.js';
import { readRepoConfig } from './repo-config.js';
import { detectToolchain, pythonImportPath, readManifestFields, readScripts, toolchainSteps } from './detect.js';
import { detectPackageManager } from './package-manager.js';
import { repoChecks } from './repo-checks.js';

/** Inputs of {@link planVerification}. */
export interface PlanOptions {
  /** `verification:` from config.yaml: per-toolchain default commands. */
  config: VerificationConfig;
  /** The job's definition of done, as argv arrays. Non-empty, it replaces the repository's. */
  jobDod?: string[][];
  /**
   * The checks' environment: further checks found in the repository (not configured) whose
   * program is not on its PATH are left out rather than fail the job. Unset: all are kept.
   */
  env?: Readonly<Record<string, string>>;
}

/**
 * Decides what to run in `workdir`. Precedence, most specific first:
 * - steps: `.codefleet.yml` `verify.<step>` (`[]` skips) > what the toolchain detection
 *   derives from the repository (package.json scripts, ruff config) > config.yaml's
 *   commands for the toolchain (an empty one switches the step off everywhere);
 * - toolchain: `.codefleet.yml` `toolchain` > the first marker file found (package.json,
 *   go.mod, Cargo.toml, pyproject.toml);
 * - DoD: the job's, when non-empty > `.codefleet.yml` `dod` > none. An empty job DoD does
 *   not erase the repository's: the repository's bar holds unless a job sets its own.
 * - further checks the repository runs itself (npm scripts such as `check` or `test:unit`,
 *   flake8, AGENTS.md commands; see {@link repoChecks}) join their step, after its command.
 *
 * @throws {ConfigError} (`invalid_config`) when `.codefleet.yml` is invalid, naming each key path.
 */
export async function planVerification(workdir: string, options: PlanOptions): Promise<VerifyPlan> {
  const repo = await readRepoConfig(workdir);
  const toolchain = repo?.toolchain ?? (await detectToolchain(workdir));
  const manager =
    toolchain === 'node' ? await detectPackageManager(workdir, await readManifestFields(workdir)) : undefined;
  const detected = await toolchainSteps(workdir, toolchain, options.config, manager);

  const primary: PlannedStep[] = [];
  for (const name of stepOrder) {
    const override = name === 'install' ? undefined : repo?.verify[name];
    const command = override ?? detected[name];
    if (command !== undefined && command.length > 0) primary.push({ name, command: [...command] });
  }
  // The repository's own further checks, except for a step .codefleet.yml sets: it says
  // exactly what runs there.
  const scripts = toolchain === 'node' ? await readScripts(workdir) : undefined;
  // The package manager is provided for the runs after planning (provideManager): not on PATH yet.
  const available = async (program: string) =>
    options.env === undefined ||
    program === manager?.name ||
    (await findExecutable(program, workdir, options.env.PATH)) !== undefined;
  const extra = (await repoChecks(workdir, toolchain, scripts, primary, available, manager)).filter(
    (step) => step.name === 'install' || repo?.verify[step.name] === undefined,
  );
  const steps = stepOrder.flatMap((name) => [...primary, ...extra].filter((step) => step.name === name));
  const env: Record<string, string> = {};
  const importPath =
    toolchain === 'python' && detected.install === undefined ? await pythonImportPath(workdir) : undefined;
  if (importPath !== undefined) env.PYTHONPATH = importPath;

  const jobDod = (options.jobDod ?? []).filter((command) => command.length > 0);
  const useJob = jobDod.length > 0;
  const dod = useJob ? jobDod : (repo?.dod ?? []);
  const repoShaped =
    repo !== undefined &&
    (repo.toolchain !== undefined || repo.dod !== undefined || Object.keys(repo.verify).length > 0);
  return {
    toolchain,
    steps,
    dod: dod.map((command) => [...command]),
    env,
    source: useJob ? 'job' : repoShaped ? 'repo' : 'detected',
    ...(manager === undefined ? {} : { packageManager: manager }),
    ...(scripts === undefined ? {} : { scripts }),
  };
}

// Search paths the plan's entries go in front of, the worker's own kept behind them.
const searchPaths = new Set(['PATH', 'PYTHONPATH']);

/**
 * The environment checks run with: the worker's `base`, plus what the plan needs (PYTHONPATH
 * and PATH entries in front: a provided package manager's launchers, a `src/` layout).
 */
export function planEnv(plan: Pick<VerifyPlan, 'env'>, base: Readonly<Record<string, string>>): Record<string, string> {
  const env = { ...base };
  for (const [name, value] of Object.entries(plan.env)) {
    env[name] = searchPaths.has(name) && base[name] ? `${value}:${base[name]}` : value;
  }
  return env;
}
