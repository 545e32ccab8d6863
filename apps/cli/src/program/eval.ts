import { InvalidArgumentError, Option, type Command } from 'commander';
import { checkRepoRef } from '@codefleet/core';
import type { EvalValidateCliOptions } from '../commands/eval-validate.js';
import type { EvalReportCliOptions, EvalRunCliOptions, MineCliOptions } from '../commands/evaluate.js';
import { commands, positiveInt, type ProgramContext } from './context.js';

/** Parses a share between 0 and 1 (`--holdout`). */
const share = (value: string) => {
  const n = Number(value);
  if (!(n >= 0 && n < 1))
    throw new InvalidArgumentError(`expected a share from 0 up to (not including) 1, got "${value}"`);
  return n;
};

/** Parses a date (`--since`). */
const date = (value: string) => {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw new InvalidArgumentError(`expected a date such as 2025-01-31, got "${value}"`);
  return at;
};

/** Parses a GitHub repository (`--github`). */
const githubRepo = (value: string) => {
  const ref = checkRepoRef(value);
  if (typeof ref === 'string' || ref.kind !== 'github')
    throw new InvalidArgumentError(`expected GitHub owner/name, got "${value}"`);
  return value;
};

/** `eval`: measuring agents and models on a repository's own history. */
export function registerEval(program: Command, { io, load, exitWith, withRuntime }: ProgramContext): void {
  const group = program.command('eval').description("measure agents and models on a repository's own past changes");
  group
    .command('mine')
    .description(
      "turn a repository's history into tasks: each first-parent commit (a merged pull request) changing tests and code becomes a suite line (SWE-bench fields); with --github, each merged pull request, stated by the issue it fixes",
    )
    .option('--repo <path|url>', 'the repository: a local clone (work tree or bare) or a git URL')
    .option(
      '--github <owner/name>',
      'mine the merged pull requests of this GitHub repository (token: forge.github.token_env; API: forge.github.api_url); its history is cloned unless --repo names a clone',
      githubRepo,
    )
    .requiredOption('--out <file>', 'the suite file (JSONL): appended to, so a stopped run resumes')
    .option(
      '--name <owner/name>',
      'the repository as instances name it (default: --github, else the last two parts of --repo)',
    )
    .addOption(
      new Option('--ref <branch|commit>', 'whose first-parent history is read (default HEAD)').conflicts('github'),
    )
    .option('--since <date>', 'read no commit (or pull request merged) before this', date)
    .option('--max <n>', 'instances at most, those in --out included (default 100)', positiveInt)
    .option('--max-commits <n>', 'commits (or merged pull requests) read at most (default 5000)', positiveInt)
    .option('--holdout <share>', 'the newest share of the tasks held out (split: holdout; default 0.2)', share)
    .action(async (opts: MineCliOptions) => {
      const { evalMine } = await commands.evaluate();
      exitWith(await evalMine(await load(), opts, io));
    });
  registerValidate(group, { io, withRuntime });
  registerSuiteCommands(group, { io, withRuntime });
}

/** `eval validate`. */
function registerValidate(group: Command, { io, withRuntime }: Pick<ProgramContext, 'io' | 'withRuntime'>): void {
  group
    .command('validate')
    .description(
      'keep the real tasks: tests run at the base, with the tests, with the fix (twice: flaky tests are left out), then the oracle and an empty agent as jobs',
    )
    .requiredOption('--suite <file>', 'the mined suite (JSONL)')
    .requiredOption('--out <file>', 'where the valid tasks are written, with their test lists')
    .requiredOption('--repo <path|url>', 'a local clone of the repository the runs check out from')
    .option('--instance <id>', 'only this instance (repeatable)', (id: string, ids: string[] = []) => [...ids, id])
    .option('--no-oracle', 'skip the oracle and empty jobs (no worker needed): the test runs alone decide')
    .option('--max-per-repo <n>', 'oracle and empty jobs queued or running at once (default 2)', positiveInt)
    .action(async (opts: EvalValidateCliOptions) => {
      const { evalValidate } = await commands.evalValidate();
      await withRuntime((rt) => evalValidate(rt, opts, io));
    });
}

/** `eval run` and `eval report`: the same suite options, then what each does. */
function registerSuiteCommands(group: Command, { io, withRuntime }: Pick<ProgramContext, 'io' | 'withRuntime'>): void {
  const suiteOptions = (command: Command) =>
    command
      .requiredOption('--suite <file>', 'the suite file (JSONL)')
      .requiredOption(
        '--configuration <spec>',
        'a configuration: oracle (the fix itself), empty (no change), an agent or profile name, or name=agent (repeatable)',
        (spec: string, specs: string[] = []) => [...specs, spec],
      )
      .option('--trials <n>', 'runs of each instance per configuration (default 1)', positiveInt)
      .addOption(
        new Option('--split <split>', 'which instances: dev (default), holdout or all').choices([
          'dev',
          'holdout',
          'all',
        ]),
      )
      .option('--instance <id>', 'only this instance (repeatable)', (id: string, ids: string[] = []) => [...ids, id]);
  suiteOptions(group.command('run'))
    .description(
      "run a suite's instances under each configuration as jobs on the configured queue, graded by their hidden tests",
    )
    .option('--repo <path|url|owner/name>', "where workers fetch the repository (default: each instance's repo)")
    .option('--max-per-repo <n>', 'eval jobs of one repository queued or running at once (default 2)', positiveInt)
    .option('--budget-usd <amount>', "what the suite's runs may spend in all; no job is queued past it", money)
    .action(async (opts: EvalRunCliOptions) => {
      const { evalRun } = await commands.evaluate();
      await withRuntime((rt) => evalRun(rt, opts, io));
    });
  suiteOptions(group.command('report'))
    .description('report how each configuration did: resolved rate, pass@k, cost, time, failures, paired comparisons')
    .addOption(new Option('--format <format>', 'markdown (default) or json').choices(['markdown', 'json']))
    .option('--out <file>', 'write the report here (default: standard output)')
    .option('--target <rate>', 'name the cheapest configuration resolving at least this share of tasks (0..1)', rate)
    .option('--swebench <file>', "also export the suite's instances as SWE-bench's dataset writes them")
    .option(
      '--write-chain <file>',
      "with --target: write the cheapest configuration reaching it as the repository's escalation chain, a config.yaml fragment to review",
    )
    .action(async (opts: EvalReportCliOptions) => {
      if (opts.writeChain !== undefined && opts.target === undefined)
        throw new InvalidArgumentError('--write-chain writes the cheapest configuration reaching --target: give it');
      const { evalReport } = await commands.evaluate();
      await withRuntime((rt) => evalReport(rt, opts, io));
    });
}

/** Parses a rate above 0, at most 1 (`--target`). */
const rate = (value: string) => {
  const n = Number(value);
  if (!(n > 0 && n <= 1)) throw new InvalidArgumentError(`expected a share above 0, at most 1, got "${value}"`);
  return n;
};

/** Parses an amount of US dollars. */
const money = (value: string) => {
  const n = Number(value);
  if (!(n > 0)) throw new InvalidArgumentError(`expected an amount of US dollars above 0, got "${value}"`);
  return n;
};
