import { type ConfigProblem, formatPath } from './errors.js';

/** An environment as passed around this package; `process.env` fits. */
export type Env = Readonly<Record<string, string | undefined>>;

/** A key path into the parsed YAML tree. */
export type KeyPath = readonly (string | number)[];

/** The YAML tree after `${VAR}` expansion. */
export interface Expansion {
  /** The tree with every string value expanded; values that failed to expand are left out. */
  tree: unknown;
  /** Unset variables and malformed references, one problem each. */
  problems: ConfigProblem[];
  /**
   * The values that came from expansion, keyed by {@link pathKey}, with the text they were
   * written as. Validation coerces only these strings to numbers and booleans, so a literal
   * `"abc"` in a number field stays an error.
   */
  expanded: Map<string, string>;
}

/** A map key for a key path that, unlike the dotted form, cannot collide. */
export function pathKey(path: KeyPath): string {
  return JSON.stringify(path);
}

/**
 * Expands `${VAR}` and `${VAR:-default}` in every string value (never in keys) of a parsed
 * YAML tree. Working on the parsed tree rather than the text means an expanded value is
 * always data and can never inject YAML structure.
 *
 * - `${VAR:-default}` uses `default` when VAR is unset or empty, as in the shell; the default
 *   is literal text (no nested references).
 * - `$${` is a literal `${`.
 * - A referenced variable that is unset, with no default, is a problem naming the key path.
 * - A value made empty by expansion counts as not set: the key (or list item) is left out so
 *   its default applies. This is what makes `worker_id: ${CODEFLEET_WORKER_ID:-}` mean "the
 *   variable, else the host name". A literal `""` is kept as written.
 */
export function expandTree(tree: unknown, env: Env): Expansion {
  const problems: ConfigProblem[] = [];
  const expanded = new Map<string, string>();

  const visit = (value: unknown, path: (string | number)[]): { keep: boolean; value: unknown } => {
    if (typeof value === 'string') {
      const result = expandString(value, env);
      if (result.errors.length > 0) {
        for (const message of result.errors) problems.push({ path: formatPath(path), message });
        return { keep: false, value: undefined };
      }
      // Text with only `$${` escapes is literal: it is unescaped but not marked as expanded.
      if (!result.hadReference) return { keep: true, value: result.value };
      if (result.value === '') return { keep: false, value: undefined };
      expanded.set(pathKey(path), value);
      return { keep: true, value: result.value };
    }
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (const item of value) {
        const visited = visit(item, [...path, out.length]);
        if (visited.keep) out.push(visited.value);
      }
      return { keep: true, value: out };
    }
    if (isPlainObject(value)) {
      const entries: [string, unknown][] = [];
      for (const [key, item] of Object.entries(value)) {
        const visited = visit(item, [...path, key]);
        if (visited.keep) entries.push([key, visited.value]);
      }
      // fromEntries defines own properties, so a `__proto__` key stays an (unknown) key.
      return { keep: true, value: Object.fromEntries(entries) };
    }
    return { keep: true, value };
  };

  return { tree: visit(tree, []).value, problems, expanded };
}

interface StringExpansion {
  value: string;
  hadReference: boolean;
  errors: string[];
}

const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([\s\S]*))?$/;

/** Expands the references in one string; see {@link expandTree} for the rules. */
export function expandString(text: string, env: Env): StringExpansion {
  let value = '';
  let hadReference = false;
  const errors: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      value += '${';
      i += 3;
      continue;
    }
    if (!text.startsWith('${', i)) {
      value += text[i];
      i += 1;
      continue;
    }
    const close = text.indexOf('}', i + 2);
    if (close === -1) {
      errors.push(`unterminated \${ in ${JSON.stringify(text)} (write $\${ for a literal \${)`);
      break;
    }
    const body = text.slice(i + 2, close);
    i = close + 1;
    hadReference = true;
    const match = REFERENCE.exec(body);
    const name = match?.[1];
    if (match === null || name === undefined) {
      errors.push(
        `invalid reference \${${body}}: expected \${NAME} or \${NAME:-default} (write $\${ for a literal \${)`,
      );
      continue;
    }
    const fallback = match[2];
    const current = readVariable(env, name);
    if (fallback !== undefined && (current === undefined || current === '')) value += fallback;
    else if (current !== undefined) value += current;
    else errors.push(`environment variable ${name} is not set (use \${${name}:-default} to give a fallback)`);
  }
  return { value, hadReference, errors };
}

/**
 * The value of variable `name`, looking at own properties only: a plain-object env must not
 * answer `${constructor}` from Object.prototype.
 */
export function readVariable(env: Env, name: string): string | undefined {
  return Object.hasOwn(env, name) ? env[name] : undefined;
}

/** A mapping from the YAML tree (not an array, not null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
