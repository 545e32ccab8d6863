import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError } from 'commander';
import type { LoadedConfig } from '@codefleet/config';
import { CodefleetError, formatUsd } from '@codefleet/core';
import {
  buildReport,
  evalJobId,
  evalTasks,
  formatSuite,
  instancePrefix,
  mineCommits,
  mineGithubPulls,
  parseEvalConfig,
  parseSuite,
  renderMarkdown,
  runEvaluation,
  toSwebench,
  trialOf,
  type EvalConfig,
  type EvalReport,
  type Instance,
  type MineProgress,
  type PullRequestReads,
} from '@codefleet/eval';
import { createGithubPullHistory, githubCredentialEnv } from '@codefleet/github';
import { captureProcess, runProcess } from '@codefleet/process';
import { gitHostFor } from '../pipeline-deps.js';
import type { Io } from '../program/context.js';
import { gitEnvFrom, type Runtime } from '../runtime.js';
import { cliVersion } from '../version.js';
import { normalizeRepo } from './jobs.js';

/** Options of `codefleet eval mine`: `--repo`, `--github` or both. */
export interface MineCliOptions {
  /** Where the history is: a local clone or a git URL; default GitHub's clone URL of `github`. */
  repo?: string;
  /** `owner/name`: mine its merged pull requests, read through GitHub's API. */
  github?: string;
  out: string;
  name?: string;
  ref?: string;
  since?: Date;
  max?: number;
  maxCommits?: number;
  holdout?: number;
}

/** A clone of a remote kept for mining, fetched again at each run; its deadline. */
const cloneTimeoutMs = 30 * 60_000;

// A local path is read in place; a URL is cloned (bare) into the data directory once, then fetched.
async function historyOf(config: LoadedConfig, repo: string, io: Io, env: Record<string, string>): Promise<string> {
  const local = resolve(io.cwd, repo);
  if (existsSync(local)) return local;
  const dir = join(
    config.config.data_dir,
    'eval',
    'repos',
    createHash('sha256').update(repo).digest('hex').slice(0, 16),
  );
  await mkdir(join(dir, '..'), { recursive: true });
  const argv = existsSync(dir)
    ? ['git', '-C', dir, 'fetch', '--quiet', '--prune', 'origin', '+refs/heads/*:refs/heads/*']
    : ['git', 'clone', '--quiet', '--bare', '--', repo, dir];
  io.err(`eval mine: ${existsSync(dir) ? 'fetching' : 'cloning'} ${repo}`);
  const run = await runProcess(argv, { cwd: join(dir, '..'), env, timeoutMs: cloneTimeoutMs });
  if (run.exitCode !== 0)
    throw new Error(`could not read ${repo}: ${run.spawnError ?? run.outputTail.trim().split('\n').at(-1) ?? ''}`);
  return dir;
}

function progressLine(p: MineProgress, read: string): string {
  const skipped = Object.entries(p.skipped)
    .map(([reason, n]) => `${n} ${reason}`)
    .join(', ');
  return `eval mine: read ${p.read} of ${p.total} ${read}; ${p.mined} tasks${skipped === '' ? '' : `; passed over: ${skipped}`}`;
}

/**
 * What `--github` reads through: the API with the configured token (`forge.github.token_env`)
 * at `forge.github.api_url`, and git with the same token, handed over by the credential helper
 * rather than put in the clone URL.
 */
function githubSource(
  loaded: LoadedConfig,
  name: string,
  env: Record<string, string>,
): { name: string; reads: PullRequestReads; cloneUrl: string; gitEnv: Record<string, string> } {
  const { token, token_env: tokenEnv, api_url: apiUrl } = loaded.config.forge.github;
  if (token === undefined)
    throw new CodefleetError('invalid_config', `eval mine --github reads GitHub's API: export a token in $${tokenEnv}`);
  const gitUrl = gitHostFor(apiUrl);
  return {
    name,
    reads: createGithubPullHistory({ token, apiUrl }),
    cloneUrl: `${gitUrl}/${name}.git`,
    gitEnv: githubCredentialEnv(env, token, gitUrl),
  };
}

/**
 * `codefleet eval mine`: appends the tasks mined from `--repo`'s history, or from `--github`'s
 * merged pull requests, to `--out`, skipping those already there (a stopped run resumes).
 * Resolves the exit code.
 */
export async function evalMine(loaded: LoadedConfig, options: MineCliOptions, io: Io): Promise<number> {
  const out = resolve(io.cwd, options.out);
  // Read before anything is fetched: a suite that does not parse is not appended to.
  const done = existsSync(out) ? parseSuite(await readFile(out, 'utf8')).instances.map((i) => i.instance_id) : [];
  const baseEnv = { ...gitEnvFrom(loaded.env), PATH: loaded.env.PATH ?? '' };
  const github = options.github === undefined ? undefined : githubSource(loaded, options.github, baseEnv);
  const repo = options.repo ?? github?.cloneUrl;
  if (repo === undefined)
    throw new InvalidArgumentError('give --repo (a clone or a git URL), --github owner/name, or both');
  const env = github?.gitEnv ?? baseEnv;
  const gitDir = await historyOf(loaded, repo, io, env);
  const noun = github === undefined ? 'commits' : 'merged pull requests';
  let lastLine = 0;
  let added = 0;
  const run = {
    gitDir,
    repo: options.name ?? github?.name ?? repo,
    env,
    done: new Set(done),
    ...(options.since === undefined ? {} : { since: options.since }),
    ...(options.max === undefined ? {} : { max: options.max }),
    ...(options.holdout === undefined ? {} : { holdoutShare: options.holdout }),
    onInstance: async (instance: Instance) => {
      await appendFile(out, formatSuite([instance]));
      added += 1;
    },
    onProgress: (p: MineProgress) => {
      // A line every 100 changes read, and the last one: progress without flooding a log.
      if (p.read - lastLine >= 100 || p.read === p.total) {
        lastLine = p.read;
        io.err(progressLine(p, noun));
      }
    },
  };
  const progress =
    github === undefined
      ? await mineCommits({
          ...run,
          ...(options.ref === undefined ? {} : { ref: options.ref }),
          ...(options.maxCommits === undefined ? {} : { maxCommits: options.maxCommits }),
        })
      : await mineGithubPulls({
          ...run,
          github: github.name,
          reads: github.reads,
          ...(options.maxCommits === undefined ? {} : { maxPulls: options.maxCommits }),
          onWait: (ms, reason) => io.err(`eval mine: ${reason}; trying again in ${Math.ceil(ms / 1_000)} s`),
        });
  io.out(`${progressLine(progress, noun)} (${added} new) in ${out}`);
  return 0;
}

/** The suite options `eval run` and `eval report` share. */
interface SuiteCliOptions {
  suite: string;
  configuration: string[];
  trials?: number;
  split?: 'dev' | 'holdout' | 'all';
  instance?: string[];
}

/** Options of `codefleet eval run`. */
export interface EvalRunCliOptions extends SuiteCliOptions {
  repo?: string;
  maxPerRepo?: number;
  budgetUsd?: number;
}

/** Options of `codefleet eval report`. */
export interface EvalReportCliOptions extends SuiteCliOptions {
  format?: 'markdown' | 'json';
  out?: string;
  target?: number;
  swebench?: string;
  /** Write the cheapest configuration reaching `target` as an escalation chain, for config.yaml. */
  writeChain?: string;
}

// The suite file and the tasks the options pick from it; a bad configuration is a usage error.
async function tasksOf(options: SuiteCliOptions, cwd: string) {
  const text = await readFile(resolve(cwd, options.suite), 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new InvalidArgumentError(`cannot read the suite ${options.suite}: ${error.code ?? error.message}`);
  });
  const suite = parseSuite(text);
  const configs = options.configuration.map((spec) => {
    try {
      return parseEvalConfig(spec);
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
  });
  const names = configs.map((c) => c.name);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) throw new InvalidArgumentError(`configuration ${twice} is given twice`);
  const trials = options.trials ?? 1;
  const tasks = evalTasks(suite, configs, {
    trials,
    ...(options.split === undefined ? {} : { split: options.split }),
    ...(options.instance === undefined ? {} : { only: new Set(options.instance) }),
  });
  if (tasks.length === 0) {
    // Mining marks the newest share of all candidates holdout, so a small --max can make
    // every task holdout: say what the suite has.
    const splits = (['dev', 'holdout'] as const).map(
      (split) => `${suite.instances.filter((i) => i.split === split).length} ${split}`,
    );
    throw new InvalidArgumentError(
      `no instance of ${options.suite} matches --split ${options.split ?? 'dev'}${options.instance === undefined ? '' : ' and --instance'} (it has ${splits.join(', ')}; --split all takes every one)`,
    );
  }
  return { suite, configs, trials, tasks };
}

/** `codefleet eval run`: the suite's tasks as jobs, fed to the queue as limits allow, until all ended. */
export async function evalRun(rt: Runtime, options: EvalRunCliOptions, io: Io): Promise<number> {
  const { suite, tasks } = await tasksOf(options, io.cwd);
  const repo = options.repo === undefined ? undefined : normalizeRepo(options.repo, io.cwd);
  let last = '';
  const progress = await runEvaluation(
    {
      enqueue: (job) => rt.queue.enqueue(job),
      getRun: (id) => rt.store.get(id),
      deadLetters: () => rt.queue.deadLetters({ limit: 1_000 }),
    },
    {
      digest: suite.digest,
      tasks,
      requestedBy: rt.loaded.env.USER ?? 'eval',
      ...(repo === undefined ? {} : { repo }),
      ...(options.maxPerRepo === undefined ? {} : { maxPerRepo: options.maxPerRepo }),
      ...(options.budgetUsd === undefined ? {} : { budgetUsd: options.budgetUsd }),
      onProgress: (p) => {
        const line = `eval run: ${p.earlier + p.finished} of ${p.total} finished (${p.earlier} earlier), ${p.running} running, ${formatUsd(p.spentUsd)} spent`;
        if (line !== last) io.err(line);
        last = line;
      },
    },
  );
  if (progress.overBudget > 0) io.err(`eval run: ${progress.overBudget} not queued: the budget is spent`);
  if (progress.abandoned.length > 0)
    io.err(`eval run: given up on (no run ended in time): ${progress.abandoned.join(', ')}`);
  for (const dead of progress.deadLettered) io.err(`eval run: ${dead.id} was dead-lettered: ${dead.reason}`);
  io.out(`eval run: ${progress.earlier + progress.finished} of ${progress.total} finished; suite ${suite.digest}`);
  return progress.overBudget > 0 || progress.abandoned.length > 0 || progress.deadLettered.length > 0 ? 1 : 0;
}

/** `codefleet eval report`: what each configuration resolved, at what cost, compared in pairs. */
export async function evalReport(rt: Runtime, options: EvalReportCliOptions, io: Io): Promise<number> {
  const { suite, configs, trials, tasks } = await tasksOf(options, io.cwd);
  const results = [];
  for (const task of tasks) results.push(trialOf(task, await rt.store.get(evalJobId(suite.digest, task))));
  const report = buildReport(
    results,
    {
      codefleet: await codefleetIdentity(rt.loaded.env),
      suite: suite.digest,
      configs,
      trials,
      instances: new Set(tasks.map((t) => t.instance.instance_id)).size,
    },
    options.target === undefined ? {} : { target: options.target },
  );
  const text = options.format === 'json' ? `${JSON.stringify(report, null, 2)}\n` : renderMarkdown(report);
  if (options.out === undefined) io.out(text.trimEnd());
  else await writeFile(resolve(io.cwd, options.out), text);
  if (options.swebench !== undefined) await writeFile(resolve(io.cwd, options.swebench), toSwebench(suite.instances));
  if (options.writeChain === undefined) return 0;
  return writeChain(options.writeChain, report, configs, suite.instances[0]?.repo ?? 'repository', io);
}

/**
 * Writes the cheapest configuration reaching the report's target as an escalation chain named
 * after the repository, as a config.yaml fragment the operator reviews and merges (nothing is
 * changed in place). Resolves 1 when no configuration reaches the target.
 */
async function writeChain(
  file: string,
  report: EvalReport,
  configs: readonly EvalConfig[],
  repo: string,
  io: Io,
): Promise<number> {
  const chosen = configs.find((c) => c.name === report.cheapest?.config);
  if (report.cheapest === undefined || chosen?.kind !== 'agent') {
    io.err(`eval report: no chain written: ${report.cheapest?.reason ?? 'give --target'}`);
    return 1;
  }
  const name = instancePrefix(repo)
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, '-')
    .slice(0, 64);
  const text = [
    `# codefleet eval report --target ${report.cheapest.target}, suite ${report.header.suite}:`,
    `# ${report.cheapest.reason}.`,
    '# Review, then merge into config.yaml: a job (or a chat route) naming this chain runs it.',
    'agents:',
    '  chains:',
    `    ${name}: [${chosen.agent}]`,
    '',
  ].join('\n');
  await writeFile(resolve(io.cwd, file), text);
  io.err(`eval report: chain ${name} (${chosen.agent}) written to ${file} for review`);
  return 0;
}

/** codefleet's version, and its commit when it runs from a git checkout: what reproduces a report. */
async function codefleetIdentity(env: Readonly<Record<string, string | undefined>>): Promise<string> {
  const source = fileURLToPath(new URL('../..', import.meta.url));
  const head = await captureProcess(['git', 'rev-parse', 'HEAD'], { cwd: source, env: { PATH: env.PATH ?? '' } });
  const commit = head.exitCode === 0 ? head.stdout.trim() : '';
  return commit === '' ? cliVersion() : `${cliVersion()} ${commit}`;
}
