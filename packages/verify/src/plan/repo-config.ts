import { type Document, type ErrorCode as YamlErrorCode, isMap, isScalar, LineCounter, parseDocument } from 'yaml';
import { ConfigError, type ConfigProblem } from '@codefleet/config';
import { maxDodCommands, splitCommandLine } from '@codefleet/core';
import { toolchains, type Toolchain } from '../types.js';
import { readRepoFile } from './repo-file.js';

/** The per-repository override file, read from the root of the working copy. */
export const repoConfigFile = '.codefleet.yml';

/** Steps a repository may override (install is derived from the lockfile, not configured). */
const overridableSteps = ['build', 'format', 'lint', 'test'] as const;
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
 * Reads `.codefleet.yml` from `workdir`; `undefined` when the file does not exist. Only a
 * regular file inside the copy is read (see `readRepoFile`): a symlink, FIFO or device
 * there is refused, so the file cannot stand in for a secret elsewhere on the host.
 *
 * @throws {ConfigError} (`invalid_config`, permanent) naming every bad key path.
 */
export async function readRepoConfig(workdir: string): Promise<RepoConfig | undefined> {
  const file = await readRepoFile(workdir, repoConfigFile, { maxBytes: maxFileBytes });
  if (file.status === 'missing') return undefined;
  if (file.status === 'refused') throw fail([{ path: '', message: `not read: the file ${file.reason}` }]);
  return parseRepoConfig(file.content.toString('utf8'));
}

/**
 * Validates the text of `.codefleet.yml`: `toolchain`, `dod` (a list of commands) and
 * `verify.{build,format,lint,test}`. A command is a string split into words as a shell
 * would (quotes honoured, shell syntax refused, never run by a shell; as in a job's DoD) or
 * an argv array; under `verify`, `[]` skips the step.
 *
 * Problems never quote the file: they give key paths, line numbers and the expected and
 * found types. The text may not be what its author meant to publish (a token pasted by
 * mistake, or written there by the agent), and problems end up in comments on the issue.
 *
 * @throws {ConfigError} listing every problem with its key path (`verify.test[1]`).
 */
export function parseRepoConfig(text: string): RepoConfig {
  const lines = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, lineCounter: lines });
  if (doc.errors.length > 0)
    throw fail(doc.errors.map((error) => syntaxProblem(error.code, lines.linePos(error.pos[0]))));
  let tree: unknown;
  try {
    tree = doc.toJS({ maxAliasCount }) ?? {};
  } catch {
    throw fail([
      { path: '', message: `the document cannot be resolved: its aliases expand to more than ${maxAliasCount} nodes` },
    ]);
  }
  if (!isMapping(tree)) {
    throw fail([
      { path: '', message: `expected a mapping with keys ${topLevelKeys.join(', ')}; got ${describe(tree)}` },
    ]);
  }

  const keyLine = keyLineOf(doc, lines);
  const problems: ConfigProblem[] = [];
  const config: RepoConfig = { verify: {} };
  for (const [key, value] of Object.entries(tree)) {
    if (key === 'toolchain') {
      const allowed: readonly string[] = [...toolchains, 'none'];
      if (typeof value === 'string' && allowed.includes(value)) config.toolchain = value as Toolchain | 'none';
      else
        problems.push({
          path: key,
          message: `expected one of ${allowed.join(', ')}; got ${describe(value, 'another string')}`,
        });
    } else if (key === 'dod') {
      const dod = parseDod(value, problems);
      if (dod) config.dod = dod;
    } else if (key === 'verify') {
      config.verify = parseVerify(value, problems, (step) => keyLine(['verify'], step));
    } else {
      // The key itself is not repeated: it is text of the file like any other.
      problems.push({
        path: '',
        message: `unknown key${keyLine([], key)}; expected one of ${topLevelKeys.join(', ')}`,
      });
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

function parseVerify(
  value: unknown,
  problems: ConfigProblem[],
  stepLine: (key: string) => string,
): RepoConfig['verify'] {
  const verify: RepoConfig['verify'] = {};
  if (value === null) return verify;
  if (!isMapping(value)) {
    problems.push({
      path: 'verify',
      message: `expected a mapping of ${overridableSteps.join(', ')}; got ${describe(value)}`,
    });
    return verify;
  }
  for (const [key, item] of Object.entries(value)) {
    if (!(overridableSteps as readonly string[]).includes(key)) {
      problems.push({
        path: 'verify',
        message: `unknown step${stepLine(key)}; expected one of ${overridableSteps.join(', ')}`,
      });
      continue;
    }
    const path = `verify.${key}`;
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
    if (typeof arg !== 'string')
      problems.push({ path: at, message: `expected a string (quote it); got ${describe(arg)}` });
    else if (arg === '') problems.push({ path: at, message: 'expected a non-empty argument' });
    else if (arg.length > maxArgChars)
      problems.push({ path: at, message: `expected at most ${maxArgChars} characters` });
  });
  return problems.length === before ? (value as string[]) : undefined;
}

function fail(problems: ConfigProblem[]): ConfigError {
  return new ConfigError(problems, repoConfigFile);
}

// What each of yaml's error codes means, said without the parser's message: some messages
// quote the offending text (an escape sequence, a tag, a header).
const yamlProblems: Readonly<Record<YamlErrorCode, string>> = {
  ALIAS_PROPS: 'an alias with an anchor or tag',
  BAD_ALIAS: 'an invalid alias or anchor',
  BAD_COLLECTION_TYPE: 'a tag that does not fit its collection',
  BAD_DIRECTIVE: 'an invalid % directive',
  BAD_DQ_ESCAPE: 'an invalid escape sequence in a double-quoted string',
  BAD_INDENT: 'bad indentation',
  BAD_PROP_ORDER: 'an anchor or tag in the wrong place',
  BAD_SCALAR_START: 'a plain value starting with a reserved character',
  BLOCK_AS_IMPLICIT_KEY: 'a block collection used as a key',
  BLOCK_IN_FLOW: 'a block collection inside a flow collection',
  DUPLICATE_KEY: 'a duplicate key',
  IMPOSSIBLE: 'malformed YAML',
  KEY_OVER_1024_CHARS: 'a key longer than 1024 characters',
  MISSING_CHAR: 'a missing quote, comma, colon, space or indicator',
  MULTILINE_IMPLICIT_KEY: 'a key spread over several lines',
  MULTIPLE_ANCHORS: 'several anchors on one node',
  MULTIPLE_DOCS: 'several documents in one file',
  MULTIPLE_TAGS: 'several tags on one node',
  NON_STRING_KEY: 'a key that is not a string',
  RESOURCE_EXHAUSTION: 'aliases that expand too far',
  TAB_AS_INDENT: 'a tab used as indentation',
  TAG_RESOLVE_FAILED: 'an unknown tag',
  UNEXPECTED_TOKEN: 'an unexpected token',
};

function syntaxProblem(code: YamlErrorCode, position: { line: number; col: number }): ConfigProblem {
  const what = yamlProblems[code] ?? 'malformed YAML';
  return { path: '', message: `YAML syntax error at line ${position.line}, column ${position.col}: ${what}` };
}

/** ` (line N)` for the key `key` of the mapping at `parent` (a key path), or '' when unknown. */
function keyLineOf(doc: Document, lines: LineCounter): (parent: string[], key: string) => string {
  return (parent, key) => {
    const node = parent.length === 0 ? doc.contents : doc.getIn(parent, true);
    if (!isMap(node)) return '';
    const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === key);
    const offset = pair !== undefined && isScalar(pair.key) ? pair.key.range?.[0] : undefined;
    return offset === undefined ? '' : ` at line ${lines.linePos(offset).line}`;
  };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Map);
}

/** The type of a value, never the value: `a string`, `a number`, `a list`, ... */
function describe(value: unknown, stringWord = 'a string'): string {
  if (Array.isArray(value)) return 'a list';
  if (isMapping(value)) return 'a mapping';
  if (value === null || value === undefined) return 'nothing';
  if (typeof value === 'string') return stringWord;
  if (typeof value === 'number' || typeof value === 'bigint') return 'a number';
  if (typeof value === 'boolean') return 'a boolean';
  return 'a value of another type';
}
