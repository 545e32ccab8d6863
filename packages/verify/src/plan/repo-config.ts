import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type YAMLError, parseDocument } from 'yaml';
import { ConfigError, type ConfigProblem } from '@codefleet/config';
import { maxDodCommands, previewValue, splitCommandLine } from '@codefleet/core';
import { toolchains, type Toolchain } from '../types.js';

/** The per-repository override file, read from the root of the working copy. */
export const repoConfigFile = '.codefleet.yml';

/** Steps a repository may override (install is derived from the lockfile, not configured). */
export const overridableSteps = ['build', 'format', 'lint', 'test'] as const;
type OverridableStep = (typeof overridableSteps)[number];

/** `.codefleet.yml` after validation. Absent keys stay absent; `[]` means "skip this step". */
export interface RepoConfig {
  /** Forces a toolchain when a repository has several marker files (or none). */
  toolchain?: Toolchain | 'none';
  /** Definition-of-done commands as argv arrays. */
  dod?: string[][];
  verify: Partial<Record<OverridableStep, string[]>>;
}

// The file is a handful of commands; anything larger is a mistake or an attack.
const maxFileBytes = 64 * 1024;
const maxArgs = 256;
const maxArgChars = 4096;
// YAML aliases can expand exponentially ("billion laughs").
const maxAliasCount = 100;
const topLevelKeys = ['toolchain', 'dod', 'verify'] as const;

/**
 * Reads `.codefleet.yml` from `workdir`; `undefined` when the file does not exist.
 *
 * @throws {ConfigError} (`invalid_config`, permanent) naming every bad key path.
 */
export async function readRepoConfig(workdir: string): Promise<RepoConfig | undefined> {
  const path = join(workdir, repoConfigFile);
  let text: string;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw fail([{ path: '', message: 'expected a regular file' }]);
    if (info.size > maxFileBytes) throw fail([{ path: '', message: `file is ${info.size} bytes; at most ${maxFileBytes} allowed` }]);
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fail([{ path: '', message: `cannot read the file: ${(error as Error).message}` }]);
  }
  return parseRepoConfig(text);
}

/**
 * Validates the text of `.codefleet.yml`: `toolchain`, `dod` (a list of commands) and
 * `verify.{build,format,lint,test}`. A command is a string split into words as a shell
 * would (quotes honoured, shell syntax refused, never run by a shell; as in a job's DoD) or
 * an argv array; under `verify`, `[]` skips the step.
 *
 * @throws {ConfigError} listing every problem with its key path (`verify.test[1]`).
 */
export function parseRepoConfig(text: string): RepoConfig {
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) throw fail(doc.errors.map(syntaxProblem));
  let tree: unknown;
  try {
    tree = doc.toJS({ maxAliasCount }) ?? {};
  } catch (error) {
    throw fail([{ path: '', message: (error as Error).message }]);
  }
  if (!isMapping(tree)) {
    throw fail([{ path: '', message: `expected a mapping with keys ${topLevelKeys.join(', ')}; got ${describe(tree)}` }]);
  }

  const problems: ConfigProblem[] = [];
  const config: RepoConfig = { verify: {} };
  for (const [key, value] of Object.entries(tree)) {
    if (key === 'toolchain') {
      const allowed: readonly string[] = [...toolchains, 'none'];
      if (typeof value === 'string' && allowed.includes(value)) config.toolchain = value as Toolchain | 'none';
      else problems.push({ path: key, message: `expected one of ${allowed.join(', ')}; got ${describe(value)}` });
    } else if (key === 'dod') {
      const dod = parseDod(value, problems);
      if (dod) config.dod = dod;
    } else if (key === 'verify') {
      config.verify = parseVerify(value, problems);
    } else {
      problems.push({ path: key, message: `unknown key; expected one of ${topLevelKeys.join(', ')}` });
    }
  }
  if (problems.length > 0) throw fail(problems);
  return config;
}

function parseDod(value: unknown, problems: ConfigProblem[]): string[][] | undefined {
  if (value === null) return [];
  if (!Array.isArray(value)) {
    problems.push({ path: 'dod', message: `expected a list of commands; got ${describe(value)}` });
    return undefined;
  }
  if (value.length > maxDodCommands) {
    problems.push({ path: 'dod', message: `expected at most ${maxDodCommands} commands; got ${value.length}` });
    return undefined;
  }
  const commands: string[][] = [];
  value.forEach((item, index) => {
    const command = parseCommand(item, `dod[${index}]`, problems);
    if (command === undefined) return;
    if (command.length === 0) problems.push({ path: `dod[${index}]`, message: 'expected a non-empty command' });
    else commands.push(command);
  });
  return commands;
}

function parseVerify(value: unknown, problems: ConfigProblem[]): RepoConfig['verify'] {
  const verify: RepoConfig['verify'] = {};
  if (value === null) return verify;
  if (!isMapping(value)) {
    problems.push({ path: 'verify', message: `expected a mapping of ${overridableSteps.join(', ')}; got ${describe(value)}` });
    return verify;
  }
  for (const [key, item] of Object.entries(value)) {
    const path = `verify.${key}`;
    if (!(overridableSteps as readonly string[]).includes(key)) {
      problems.push({ path, message: `unknown step; expected one of ${overridableSteps.join(', ')}` });
      continue;
    }
    const command = parseCommand(item, path, problems);
    if (command === undefined) continue;
    // An empty string is more likely a slip than a wish to skip; `[]` says it explicitly.
    if (command.length === 0 && typeof item === 'string') {
      problems.push({ path, message: 'expected a non-empty command; use [] to skip the step' });
    } else {
      verify[key as OverridableStep] = command;
    }
  }
  return verify;
}

/**
 * A command string (split into words like a shell would, never run by one: see
 * `splitCommandLine`) or argv array; `undefined` after recording a problem.
 */
function parseCommand(value: unknown, path: string, problems: ConfigProblem[]): string[] | undefined {
  if (typeof value === 'string') {
    if (value.length > maxArgChars) {
      problems.push({ path, message: `expected at most ${maxArgChars} characters; got ${value.length}` });
      return undefined;
    }
    const split = splitCommandLine(value);
    if ('argv' in split) return split.argv;
    problems.push({ path, message: split.problem });
    return undefined;
  }
  if (!Array.isArray(value)) {
    problems.push({ path, message: `expected a command string or an argv array of strings; got ${describe(value)}` });
    return undefined;
  }
  if (value.length > maxArgs) {
    problems.push({ path, message: `expected at most ${maxArgs} arguments; got ${value.length}` });
    return undefined;
  }
  const before = problems.length;
  value.forEach((arg, index) => {
    const at = `${path}[${index}]`;
    // Numbers are refused rather than coerced: `[node, -e, 1]` quoted is unambiguous.
    if (typeof arg !== 'string') problems.push({ path: at, message: `expected a string (quote it); got ${describe(arg)}` });
    else if (arg === '') problems.push({ path: at, message: 'expected a non-empty argument' });
    else if (arg.length > maxArgChars) problems.push({ path: at, message: `expected at most ${maxArgChars} characters` });
  });
  return problems.length === before ? (value as string[]) : undefined;
}

function fail(problems: ConfigProblem[]): ConfigError {
  return new ConfigError(problems, repoConfigFile);
}

function syntaxProblem(error: YAMLError): ConfigProblem {
  const firstLine = error.message.split('\n')[0] ?? error.message;
  const reason = firstLine.replace(/ at line \d+, column \d+:?$/, '');
  const position = error.linePos?.[0];
  const where = position === undefined ? '' : ` at line ${position.line}, column ${position.col}`;
  return { path: '', message: `YAML syntax error${where}: ${reason}` };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Map);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (isMapping(value)) return 'a mapping';
  return previewValue(value, 60);
}
