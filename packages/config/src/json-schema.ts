import * as z from 'zod';
import { configSchema } from './schema/index.js';

type JsonObject = { [key: string]: unknown };

/** Matches a string holding a `${VAR}` or `${VAR:-default}` reference. */
const ENV_REFERENCE_PATTERN = '\\$\\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\\}';

// Keywords that describe a field rather than constrain its value; they stay on the outer
// schema when a field is widened to also accept an environment reference.
const ANNOTATIONS = ['title', 'description', 'default', 'examples', 'deprecated'];

/**
 * JSON Schema (draft 2020-12) of `config.yaml` for editors, generated from the same zod schema
 * that validates it, with its descriptions and defaults. Numbers, booleans and enums also
 * accept a string with a `${VAR}` reference, since those are expanded before validation.
 * `forge.github.token` is absent on purpose: tokens come from the environment only.
 */
export function configJsonSchema(): JsonObject {
  const generated = z.toJSONSchema(configSchema, { target: 'draft-2020-12', io: 'input' }) as JsonObject;
  const { $schema, ...rest } = generated;
  return {
    $schema,
    title: 'codefleet config.yaml',
    ...(widen(rest) as JsonObject),
  };
}

function widen(node: unknown): unknown {
  if (!isObject(node)) return node;
  const schema = node;
  if (acceptsOnlyNonStrings(schema)) {
    const annotations: JsonObject = {};
    const constraint: JsonObject = {};
    for (const [key, value] of Object.entries(schema)) {
      // zod's int() adds the safe-integer range as bounds; they only clutter editor hints.
      if ((key === 'maximum' || key === 'minimum') && Math.abs(Number(value)) === Number.MAX_SAFE_INTEGER) continue;
      (ANNOTATIONS.includes(key) ? annotations : constraint)[key] = value;
    }
    return { ...annotations, anyOf: [constraint, { type: 'string', pattern: ENV_REFERENCE_PATTERN }] };
  }
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    // Only descend where JSON Schema holds subschemas: `default`, `enum` and friends are data,
    // and a property may well be called `default` or `type`.
    if (SCHEMA_MAPS.has(key) && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, widen(sub)]));
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) out[key] = value.map(widen);
    else if (SCHEMA_VALUES.has(key)) out[key] = widen(value);
    else out[key] = value;
  }
  return out;
}

const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions']);
const SCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
const SCHEMA_VALUES = new Set(['items', 'additionalProperties', 'not', 'contains', 'propertyNames']);

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function acceptsOnlyNonStrings(schema: JsonObject): boolean {
  const type = schema.type;
  if (type === 'number' || type === 'integer' || type === 'boolean') return true;
  return type === 'string' && Array.isArray(schema.enum);
}

/** {@link configJsonSchema} as the exact text of the committed `config.schema.json`. */
export function renderConfigJsonSchema(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}
