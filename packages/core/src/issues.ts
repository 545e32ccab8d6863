import type { z } from 'zod';
import type { JobIssue } from './errors.js';
import { previewValue } from './text.js';

/** Most issues listed in one error message; the rest are counted. */
const maxListedIssues = 20;

function plural(n: number | bigint, one: string, many: string): string {
  return `${n} ${n === 1 || n === 1n ? one : many}`;
}

function expectedName(expected: string): string {
  return expected === 'int' ? 'integer' : expected;
}

/**
 * Per-parse zod error map: short "expected …" texts instead of zod's sentences, so a
 * message reads `title: expected string, got 42`. Messages set on a schema win over it.
 */
export function describeIssue(issue: z.core.$ZodRawIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${expectedName(issue.expected)}`;
    case 'too_small': {
      const { origin, minimum } = issue;
      if (origin === 'string')
        return minimum === 1
          ? 'expected non-empty string'
          : `expected at least ${plural(minimum, 'character', 'characters')}`;
      if (origin === 'array' || origin === 'set') return `expected at least ${plural(minimum, 'item', 'items')}`;
      if (minimum === 0 && issue.inclusive === false)
        return `expected positive ${origin === 'int' ? 'integer' : 'number'}`;
      return `expected number ${issue.inclusive === false ? '>' : '>='} ${minimum}`;
    }
    case 'too_big': {
      const { origin, maximum } = issue;
      if (origin === 'string') return `expected at most ${plural(maximum, 'character', 'characters')}`;
      if (origin === 'array' || origin === 'set') return `expected at most ${plural(maximum, 'item', 'items')}`;
      return `expected number ${issue.inclusive === false ? '<' : '<='} ${maximum}`;
    }
    case 'invalid_format':
      if (issue.format === 'datetime') return 'expected ISO-8601 datetime with offset (e.g. 2024-01-31T12:00:00Z)';
      if (issue.format === 'url') return 'expected URL';
      return `expected ${issue.format} format`;
    case 'invalid_value': {
      const values = issue.values.map((v) => JSON.stringify(v));
      return values.length === 1 ? `expected ${values[0]}` : `expected one of ${values.join(', ')}`;
    }
    case 'invalid_union':
      if (issue.discriminator !== undefined && Array.isArray(issue.options)) {
        return `expected one of ${issue.options.map((v: unknown) => JSON.stringify(v)).join(', ')}`;
      }
      return 'expected a value matching one of the allowed shapes';
    default:
      return typeof issue.message === 'string' ? issue.message : 'invalid value';
  }
}

/** Renders a key path as `source.number` or `dod[2][0]`; the root is `(root)`. */
function renderPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? '(root)' : out;
}

type Lookup = { kind: 'found'; value: unknown } | { kind: 'absent' } | { kind: 'unreachable' };

/**
 * Looks a path up in the raw input: `absent` when the last key is missing from an
 * object, `unreachable` when the path runs through a non-object (a transformed value).
 */
function lookup(raw: unknown, path: readonly PropertyKey[]): Lookup {
  let current: unknown = raw;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return { kind: 'unreachable' };
    try {
      if (!Object.hasOwn(current, key)) return { kind: 'absent' };
      current = (current as Record<PropertyKey, unknown>)[key];
    } catch {
      return { kind: 'unreachable' };
    }
  }
  return { kind: 'found', value: current };
}

function isSmallSafePrimitive(value: unknown, preview: string): boolean {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return true;
  // A string is kept verbatim only when its preview is the whole of it, unredacted.
  return typeof value === 'string' && preview === JSON.stringify(value);
}

/**
 * Turns zod issues into {@link JobIssue}s. The bad value is looked up in the raw input
 * by the issue path (zod's own `input` is the whole object for discriminator errors and
 * the transformed value after a pipe), falling back to the issue's `input`.
 */
export function toIssues(raw: unknown, issues: readonly z.core.$ZodIssue[]): JobIssue[] {
  return issues.map((issue) => {
    const path = renderPath(issue.path);
    const hit = lookup(raw, issue.path);
    if (hit.kind === 'absent') return { path, message: `required (${issue.message})` };
    const value = hit.kind === 'found' ? hit.value : issue.input;
    const preview = previewValue(value);
    const jobIssue: JobIssue = { path, message: `${issue.message}, got ${preview}` };
    if (isSmallSafePrimitive(value, preview)) jobIssue.value = value;
    return jobIssue;
  });
}

/** `<prefix>: a: …; b: …` listing every issue (up to a bound, then a count). */
export function issuesMessage(prefix: string, issues: readonly JobIssue[]): string {
  const listed = issues.slice(0, maxListedIssues).map((issue) => `${issue.path}: ${issue.message}`);
  const rest = issues.length - listed.length;
  if (rest > 0) listed.push(`and ${plural(rest, 'more issue', 'more issues')}`);
  return `${prefix}: ${listed.join('; ')}`;
}
