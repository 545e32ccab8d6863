import * as z from 'zod';
import { type ConfigProblem, formatPath } from './errors.js';
import { type KeyPath, isPlainObject, pathKey } from './expand.js';
import { configSchema, type ParsedConfig } from './schema/index.js';
import { suggest } from './suggest.js';

/** Outcome of the schema step: data when valid, otherwise every problem. */
export type Validation = { ok: true; data: ParsedConfig } | { ok: false; problems: ConfigProblem[] };

// Coercing one value can only reveal problems below it (a range check), never a new string to
// coerce, so two rounds suffice; the bound is a guard against a loop, not a tuning knob.
const MAX_ROUNDS = 4;

/**
 * Step 1 of 3: checks the expanded tree against the schema and applies defaults.
 *
 * Strings produced by `${VAR}` expansion are coerced where the schema wants a number or a
 * boolean (`wait_time_seconds: ${SQS_WAIT:-20}`), because environment variables are always
 * strings. Literal strings are not coerced: `wait_time_seconds: "abc"` is a mistake in the
 * file. `tree` is modified in place by the coercion.
 */
export function validate(tree: unknown, expanded: ReadonlyMap<string, string>, secrets: readonly string[]): Validation {
  for (let round = 0; ; round++) {
    const result = configSchema.safeParse(tree);
    if (result.success) return { ok: true, data: result.data };
    const issues = result.error.issues;
    const coerced = round < MAX_ROUNDS && coerceExpanded(tree, issues, expanded);
    if (!coerced) {
      const describe = (path: KeyPath) => describeValue(tree, path, expanded, secrets);
      return { ok: false, problems: issues.flatMap((issue) => toProblems(issue, tree, describe)) };
    }
  }
}

function coerceExpanded(
  tree: unknown,
  issues: readonly z.core.$ZodIssue[],
  expanded: ReadonlyMap<string, string>,
): boolean {
  let changed = false;
  for (const issue of issues) {
    if (issue.code !== 'invalid_type') continue;
    const path = keyPath(issue.path);
    if (!expanded.has(pathKey(path))) continue;
    const value = getAt(tree, path);
    if (typeof value !== 'string') continue;
    const coerced = coerce(value, issue.expected);
    if (coerced === undefined) continue;
    setAt(tree, path, coerced);
    changed = true;
  }
  return changed;
}

const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

function coerce(value: string, expected: string): number | boolean | undefined {
  const text = value.trim();
  if (expected === 'number' || expected === 'int') return NUMBER.test(text) ? Number(text) : undefined;
  if (expected === 'boolean') {
    const lower = text.toLowerCase();
    if (lower === 'true') return true;
    if (lower === 'false') return false;
  }
  return undefined;
}

function toProblems(issue: z.core.$ZodIssue, tree: unknown, describe: (path: KeyPath) => string): ConfigProblem[] {
  const path = keyPath(issue.path);
  const at = formatPath(path);
  const got = () => describe(path);
  switch (issue.code) {
    case 'unrecognized_keys': {
      const known = knownKeys(path);
      return issue.keys.map((key) => {
        const hint = suggest(key, known);
        const message = hint === undefined ? 'unknown key' : `unknown key (did you mean ${hint}?)`;
        return { path: formatPath([...path, key]), message };
      });
    }
    case 'invalid_type': {
      const message =
        getAt(tree, path) === undefined ? 'required' : `expected ${typeName(issue.expected)}, got ${got()}`;
      return [{ path: at, message }];
    }
    case 'invalid_value': {
      const options = issue.values.map((v) => String(v));
      const value = getAt(tree, path);
      const hint = typeof value === 'string' ? suggest(value, options) : undefined;
      const tail = hint === undefined ? '' : ` (did you mean ${hint}?)`;
      return [{ path: at, message: `expected one of ${options.join(', ')}, got ${got()}${tail}` }];
    }
    case 'too_small':
    case 'too_big':
      return [{ path: at, message: `${boundMessage(issue)}, got ${got()}` }];
    case 'invalid_format': {
      const expected = issue.format === 'url' ? 'expected a URL' : issue.message;
      return [{ path: at, message: `${expected}, got ${got()}` }];
    }
    default:
      return [{ path: at, message: `${issue.message}, got ${got()}` }];
  }
}

function boundMessage(issue: z.core.$ZodIssueTooSmall | z.core.$ZodIssueTooBig): string {
  const small = issue.code === 'too_small';
  const bound = Number(small ? issue.minimum : issue.maximum);
  if (issue.origin === 'string') {
    if (small && bound === 1) return 'must not be empty';
    return `must have ${small ? 'at least' : 'at most'} ${bound} characters`;
  }
  if (issue.origin === 'array') return `must have ${small ? 'at least' : 'at most'} ${bound} items`;
  const op = small ? (issue.inclusive ? '>=' : '>') : issue.inclusive ? '<=' : '<';
  return `must be ${op} ${bound}`;
}

function typeName(expected: string): string {
  if (expected === 'object') return 'a mapping';
  if (expected === 'array') return 'a list';
  if (expected === 'int') return 'integer';
  return expected;
}

/**
 * The offending value as shown in a problem: strings quoted and cut to a readable length,
 * secret values from the environment masked (an error message may end up in a log or an
 * issue comment), and for expanded values the text they were written as.
 */
function describeValue(
  tree: unknown,
  path: KeyPath,
  expanded: ReadonlyMap<string, string>,
  secrets: readonly string[],
): string {
  const value = getAt(tree, path);
  let shown: string;
  if (typeof value === 'string') {
    let text = value;
    for (const secret of secrets) text = text.split(secret).join('***');
    shown = JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
  } else if (Array.isArray(value)) shown = 'a list';
  else if (isPlainObject(value)) shown = 'a mapping';
  else shown = String(value);
  const template = expanded.get(pathKey(path));
  return template === undefined ? shown : `${shown} (from ${JSON.stringify(template)})`;
}

/** The keys the schema allows at `path`, for "did you mean" hints. */
function knownKeys(path: KeyPath): string[] {
  let schema: z.core.$ZodType = configSchema;
  for (const segment of [...path, undefined]) {
    schema = unwrap(schema);
    if (segment === undefined) break;
    if (schema instanceof z.ZodObject) {
      const next: z.core.$ZodType | undefined = (schema.shape as Record<string, z.core.$ZodType>)[String(segment)];
      if (next === undefined) return [];
      schema = next;
    } else if (schema instanceof z.ZodArray) schema = schema.element;
    else return [];
  }
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

function unwrap(schema: z.core.$ZodType): z.core.$ZodType {
  let current = schema;
  while (current instanceof z.ZodDefault || current instanceof z.ZodPrefault || current instanceof z.ZodOptional) {
    current = current.unwrap();
  }
  return current;
}

function keyPath(path: readonly PropertyKey[]): (string | number)[] {
  return path.map((segment) => (typeof segment === 'number' ? segment : String(segment)));
}

/** The value at `path` in a tree of plain objects and arrays, or undefined. */
function getAt(tree: unknown, path: KeyPath): unknown {
  let current = tree;
  for (const segment of path) {
    if (Array.isArray(current) && typeof segment === 'number') current = current[segment];
    else if (isPlainObject(current) && Object.hasOwn(current, segment)) current = current[String(segment)];
    else return undefined;
  }
  return current;
}

function setAt(tree: unknown, path: KeyPath, value: unknown): void {
  const parent = getAt(tree, path.slice(0, -1));
  const last = path[path.length - 1];
  if (Array.isArray(parent) && typeof last === 'number') parent[last] = value;
  else if (isPlainObject(parent) && last !== undefined) parent[String(last)] = value;
}
