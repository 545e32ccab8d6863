import { InvalidArgumentError, type Command } from 'commander';
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

/** `eval`: measuring agents and models on a repository's own history. */
export function registerEval(program: Command, { io, load, exitWith }: ProgramContext): void {
  const group = program.command('eval').description("measure agents and models on a repository's own past changes");
  group
    .command('mine')
    .description(
      "turn a repository's history into tasks: each first-parent commit (a merged pull request) changing tests and code becomes a suite line (SWE-bench fields)",
    )
    .requiredOption('--repo <path|url>', 'the repository: a local clone (work tree or bare) or a git URL')
    .requiredOption('--out <file>', 'the suite file (JSONL): appended to, so a stopped run resumes')
    .option('--name <owner/name>', 'the repository as instances name it (default: the last two parts of --repo)')
    .option('--ref <branch|commit>', 'whose first-parent history is read (default HEAD)')
    .option('--since <date>', 'read no commit older than this', date)
    .option('--max <n>', 'instances at most, those in --out included (default 100)', positiveInt)
    .option('--max-commits <n>', 'commits read at most (default 5000)', positiveInt)
    .option('--holdout <share>', 'the newest share of the tasks held out (split: holdout; default 0.2)', share)
    .action(
      async (opts: {
        repo: string;
        out: string;
        name?: string;
        ref?: string;
        since?: Date;
        max?: number;
        maxCommits?: number;
        holdout?: number;
      }) => {
        const { evalMine } = await commands.evaluate();
        exitWith(await evalMine(await load(), opts, io));
      },
    );
}
