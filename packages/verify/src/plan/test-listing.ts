import { basename } from 'node:path';
import type { PlannedStep, VerifyPlan } from '../types.js';
import { scriptOf } from './package-manager.js';

/**
 * The test step's command changed so that its runner prints every test's outcome, passes
 * and skips included (what `testStatuses` reads), or undefined when it cannot tell how.
 * Decided in this order:
 * 1. a runner started directly (`pytest`, `python -m pytest`, `go test`, `cargo test`,
 *    `npx jest`, `node --test`, …): its flags, added (see {@link listingCommand});
 * 2. on node, a package.json script run by its manager (`npm test`, `pnpm run test`) whose
 *    body (from `plan.scripts`) is that one runner and nothing else: the same flags, passed
 *    through the manager (`npm test -- --verbose`; pnpm, yarn and bun take them after the
 *    script's name). A body with shell syntax (`tsc && jest`, a pipe, `$VAR`) runs more
 *    than a runner the flags would reach, and is left alone;
 * 3. anything else (a custom script, a runner unknown here, one set to a reporter that
 *    lists no tests): undefined.
 * A command that lists every test already (`node --test`, `jest --verbose`) comes back as it is.
 */
export function listingTestCommand(
  step: Pick<PlannedStep, 'command'>,
  plan: Pick<VerifyPlan, 'toolchain' | 'scripts'>,
): string[] | undefined {
  const direct = listingCommand(step.command);
  if (direct !== undefined || plan.toolchain !== 'node') return direct;
  const script = scriptOf(step.command, plan.scripts);
  const body = script === undefined ? undefined : plan.scripts?.[script];
  const words = body === undefined || shellSyntax.test(body) ? undefined : body.trim().split(/\s+/);
  const listed = words === undefined ? undefined : listingCommand(words);
  // Only flags added after the body can be passed through the manager.
  if (words === undefined || listed === undefined || words.some((word, i) => listed[i] !== word)) return undefined;
  const extra = listed.slice(words.length);
  if (extra.length === 0) return [...step.command];
  // npm hands the script only what follows `--`; the others take what follows its name.
  const separator = step.command[0] === 'npm' && !step.command.includes('--') ? ['--'] : [];
  return [...step.command, ...separator, ...extra];
}

// What makes a script body more than one command with arguments: operators, redirections,
// substitutions, continuations, a comment (which would swallow the flags). Quotes and globs
// are fine: flags are only added after them.
const shellSyntax = /[;&|<>`$(){}#\\\n]/;
const envAssignment = /^[A-Za-z_][A-Za-z0-9_]*=/;

/**
 * `command` with the flags that make its runner list each test's outcome, when it starts a
 * runner known here, after launchers (`npx`, `cross-env`, `VAR=value`, `uv run`, `node
 * <flags>`); undefined otherwise. Flags go last, or before a `--` that ends the runner's own.
 */
function listingCommand(command: readonly string[]): string[] | undefined {
  let at = 0;
  while (at < command.length) {
    const word = command[at] ?? '';
    const next = command[at + 1];
    if (envAssignment.test(word) || word === 'cross-env') at += 1;
    else if (word === 'npx' || word === 'bunx') {
      at += 1;
      while (command[at]?.startsWith('-') === true) at += 1;
    } else if ((word === 'uv' || word === 'poetry' || word === 'pdm') && next === 'run') at += 2;
    else if ((word === 'pnpm' || word === 'yarn') && next === 'exec') at += 2;
    else break;
  }
  const runner = runnerAt(command, at);
  return runner === undefined ? undefined : runner.list(command, runner.args);
}

/** A runner started at some word of a command: where its own arguments begin, and how to list. */
interface Runner {
  args: number;
  list: (command: readonly string[], args: number) => string[] | undefined;
}

function runnerAt(command: readonly string[], at: number): Runner | undefined {
  const word = command[at];
  if (word === undefined) return undefined;
  const name = basename(word).replace(/\.[cm]?js$/, '');
  if (name === 'node') return nodeRunner(command, at + 1);
  if (/^python[\d.]*$/.test(name) && command[at + 1] === '-m' && command[at + 2] === 'pytest')
    return { args: at + 3, list: pytest };
  if (name === 'pytest' || name === 'py.test') return { args: at + 1, list: pytest };
  if (name === 'go' && command[at + 1] === 'test') return { args: at + 2, list: goTest };
  if (name === 'cargo') {
    const sub = command.slice(at + 1).findIndex((arg) => !arg.startsWith('+'));
    return command[at + 1 + sub] === 'test' ? { args: at + 2 + sub, list: cargoTest } : undefined;
  }
  const js = jsRunners[name];
  return js === undefined ? undefined : { args: at + 1, list: js };
}

// `node --test …` is the runner itself; `node [flags] path/to/jest.js …` starts another.
function nodeRunner(command: readonly string[], from: number): Runner | undefined {
  let at = from;
  while (command[at]?.startsWith('-') === true) at += 1;
  if (command.slice(from, at).includes('--test')) return { args: from, list: nodeTest };
  return command[at] === undefined ? undefined : runnerAt(command, at);
}

const jsRunners: Readonly<Record<string, Runner['list']>> = {
  jest: (command, args) => (hasFlag(command, args, '--verbose') ? [...command] : addFlags(command, ['--verbose'])),
  vitest: (command, args) => withReporter(command, args, '--reporter', 'verbose'),
  mocha: (command, args) => withReporter(command, args, '--reporter', 'spec', '-R'),
  _mocha: (command, args) => withReporter(command, args, '--reporter', 'spec', '-R'),
};

function pytest(command: readonly string[]): string[] {
  // -rA: a summary line per test; -v: a line per test, skips by id; no cache: the last
  // run's failures must not reorder or narrow this one (`--lf` in addopts), nor it be written.
  const flags = ['-rA', '-v'];
  if (!command.includes('no:cacheprovider')) flags.push('-p', 'no:cacheprovider');
  return addFlags(command, flags, '--');
}

function goTest(command: readonly string[], args: number): string[] | undefined {
  // -json prints events this reader does not parse; -args hands the rest to the test binary.
  if (hasFlag(command, args, '-json')) return undefined;
  return hasFlag(command, args, '-v') ? [...command] : addFlags(command, ['-v'], '-args');
}

function cargoTest(command: readonly string[], args: number): string[] | undefined {
  // Quiet or another format prints a character per test, not its name.
  const terse = command.slice(args).some((arg) => /^(?:-q|--quiet|--format(?:=.*)?)$/.test(arg));
  if (terse) return undefined;
  // By default cargo stops at the first test target that fails: the later ones never run.
  return hasFlag(command, args, '--no-fail-fast') ? [...command] : addFlags(command, ['--no-fail-fast'], '--');
}

function nodeTest(command: readonly string[], args: number): string[] | undefined {
  // spec (the default on a terminal) and tap (elsewhere, on Node 20) name each test.
  const reporters = optionValues(command, args, '--test-reporter');
  const destinations = optionValues(command, args, '--test-reporter-destination');
  const listed = reporters.every((name) => name === 'spec' || name === 'tap');
  return listed && destinations.every((to) => to === 'stdout') ? [...command] : undefined;
}

/** `command` with `name=value` as its reporter; unchanged when it is already, undefined when another is set. */
function withReporter(
  command: readonly string[],
  args: number,
  option: string,
  value: string,
  short?: string,
): string[] | undefined {
  const set = [...optionValues(command, args, option), ...(short ? optionValues(command, args, short) : [])];
  if (set.length > 0) return set.every((name) => name === value) ? [...command] : undefined;
  return addFlags(command, [`${option}=${value}`], '--');
}

/** The values `option` is given in `command` (`--opt value` or `--opt=value`), from word `args` on. */
function optionValues(command: readonly string[], args: number, option: string): string[] {
  const values: string[] = [];
  for (let i = args; i < command.length; i += 1) {
    const word = command[i] ?? '';
    if (word === '--') break;
    if (word === option && command[i + 1] !== undefined) values.push(command[i + 1] ?? '');
    else if (word.startsWith(`${option}=`)) values.push(word.slice(option.length + 1));
  }
  return values;
}

function hasFlag(command: readonly string[], args: number, flag: string): boolean {
  const end = command.indexOf('--', args);
  return command.slice(args, end === -1 ? undefined : end).some((word) => word === flag || word.startsWith(`${flag}=`));
}

/** `flags` added at the end of `command`, or before `before` (`--`) when it has one. */
function addFlags(command: readonly string[], flags: readonly string[], before?: string): string[] {
  const at = before === undefined ? -1 : command.indexOf(before);
  return at === -1 ? [...command, ...flags] : [...command.slice(0, at), ...flags, ...command.slice(at)];
}
