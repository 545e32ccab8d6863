import { createRequire } from 'node:module';

// Checks JSON answers against GitHub's official OpenAPI description (@octokit/openapi,
// OpenAPI 3.0): the subset of JSON Schema that description uses for response bodies
// (type, nullable, required, properties, additionalProperties, items, enum, oneOf, anyOf,
// allOf, $ref). Formats, lengths and patterns are not checked: they catch no missing field.

/* eslint-disable @typescript-eslint/no-explicit-any -- a JSON document walked by key */
type Schema = Record<string, any>;

const require = createRequire(import.meta.url);

/** GitHub's description of api.github.com, loaded once. */
export function githubDescription(): Schema {
  return require('@octokit/openapi/generated/api.github.com.json') as Schema;
}

function resolve(spec: Schema, ref: string): Schema {
  const parts = ref.replace(/^#\//, '').split('/');
  let at: any = spec;
  for (const part of parts) at = at?.[part];
  if (at === undefined) throw new Error(`unresolvable $ref ${ref}`);
  return at as Schema;
}

const typeOk = (type: string, value: unknown): boolean => {
  switch (type) {
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'string':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    default:
      return true;
  }
};

/** Problems of `value` against `schema`, each with its JSON path; empty when it conforms. */
export function validate(spec: Schema, schema: Schema, value: unknown, path = '$'): string[] {
  if (schema.$ref) return validate(spec, resolve(spec, schema.$ref as string), value, path);
  const problems: string[] = [];
  if (schema.allOf) for (const part of schema.allOf as Schema[]) problems.push(...validate(spec, part, value, path));
  for (const key of ['oneOf', 'anyOf'] as const) {
    const options = schema[key] as Schema[] | undefined;
    if (!options) continue;
    const results = options.map((option) => validate(spec, option, value, path));
    // GitHub's oneOf alternatives overlap in places; one that fits is what a client needs.
    if (!results.some((r) => r.length === 0)) {
      const closest = results.reduce((a, b) => (b.length < a.length ? b : a));
      problems.push(`${path}: fits none of ${key} (closest: ${closest.slice(0, 3).join('; ')})`);
    }
  }
  if (value === null) {
    if (schema.nullable === true || schema.type === undefined) return problems;
    return [...problems, `${path}: null where ${String(schema.type)} is required`];
  }
  if (schema.type !== undefined && !typeOk(schema.type as string, value)) {
    return [
      ...problems,
      `${path}: expected ${String(schema.type)}, got ${Array.isArray(value) ? 'array' : typeof value}`,
    ];
  }
  if (schema.enum && !(schema.enum as unknown[]).includes(value))
    problems.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) => problems.push(...validate(spec, schema.items as Schema, item, `${path}[${i}]`)));
  }
  if (typeOk('object', value) && (schema.properties || schema.required || schema.additionalProperties !== undefined)) {
    const object = value as Record<string, unknown>;
    for (const key of (schema.required ?? []) as string[]) {
      if (!Object.hasOwn(object, key)) problems.push(`${path}.${key}: required but missing`);
    }
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const [key, item] of Object.entries(object)) {
      const own = properties[key];
      if (own) problems.push(...validate(spec, own, item, `${path}.${key}`));
      else if (schema.additionalProperties === false) problems.push(`${path}.${key}: not allowed`);
      else if (typeof schema.additionalProperties === 'object')
        problems.push(...validate(spec, schema.additionalProperties as Schema, item, `${path}.${key}`));
    }
  }
  return problems;
}

/**
 * The schema GitHub documents for the answer to `method route` with `status`, or a
 * string saying why there is none (an undocumented operation or status).
 */
export function responseSchema(spec: Schema, method: string, route: string, status: number): Schema | string {
  const operation = spec.paths?.[route]?.[method.toLowerCase()] as Schema | undefined;
  if (!operation) return `${method} ${route} is not in GitHub's description`;
  let response = (operation.responses?.[String(status)] ?? operation.responses?.default) as Schema | undefined;
  if (!response) return `${method} ${route} does not document status ${status}`;
  if (response.$ref) response = resolve(spec, response.$ref as string);
  const schema = response.content?.['application/json']?.schema as Schema | undefined;
  return schema ?? `${method} ${route} ${status} documents no JSON body`;
}
