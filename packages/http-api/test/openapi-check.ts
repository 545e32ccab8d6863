// Checks answers the API really gave against docs/openapi.json: a recorder for the tests'
// requests, and a validator for the JSON Schema subset the description uses. A keyword the
// validator does not know is a failure, so the description cannot outgrow the check unseen.

/** One request a test made and the answer it got. */
export interface Exchange {
  method: string;
  path: string;
  status: number;
  contentType: string | null;
  body: string;
}

/** A fetch that records every exchange into `into` (the body is read once, then handed back). */
export function recordingFetch(into: Exchange[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const body = await response.text();
    const url = new URL(input instanceof Request ? input.url : String(input));
    into.push({
      method: (init?.method ?? 'GET').toUpperCase(),
      path: url.pathname,
      status: response.status,
      contentType: response.headers.get('content-type'),
      body,
    });
    return new Response(body === '' ? null : body, { status: response.status, headers: response.headers });
  };
}

type Schema = Record<string, unknown>;
interface Doc {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: Schema }> }> }>
  >;
}

const annotations = new Set(['description', 'example', 'title']);
const checked = new Set([
  '$ref',
  'type',
  'required',
  'properties',
  'additionalProperties',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'items',
  'minItems',
  'maxItems',
  'anyOf',
]);

/** Problems of `value` against `schema` (refs resolved in `root`), each with its JSON path. */
export function validate(root: unknown, schema: Schema, value: unknown, at = '$'): string[] {
  const unknown = Object.keys(schema).filter((k) => !checked.has(k) && !annotations.has(k));
  if (unknown.length > 0) throw new Error(`${at}: the checker does not know ${unknown.join(', ')}`);
  if (typeof schema.$ref === 'string') return validate(root, resolve(root, schema.$ref), value, at);
  const type = schema.type as string | undefined;
  if (type !== undefined && !hasType(value, type))
    return [`${at}: expected ${type}, got ${JSON.stringify(value)?.slice(0, 80)}`];
  const problems: string[] = [];
  const fail = (message: string) => problems.push(`${at}: ${message}`);
  if (Array.isArray(schema.enum) && !schema.enum.includes(value))
    fail(`${JSON.stringify(value)} is not one of ${schema.enum.join(', ')}`);
  if (typeof value === 'string') {
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value))
      fail(`does not match ${schema.pattern}`);
    if (typeof schema.minLength === 'number' && [...value].length < schema.minLength)
      fail(`shorter than ${schema.minLength}`);
    if (typeof schema.maxLength === 'number' && [...value].length > schema.maxLength)
      fail(`longer than ${schema.maxLength}`);
  }
  if (typeof value === 'number' && typeof schema.minimum === 'number' && value < schema.minimum)
    fail(`below ${schema.minimum}`);
  if (Array.isArray(value)) problems.push(...arrayProblems(root, schema, value, at));
  if (isObject(value)) problems.push(...objectProblems(root, schema, value, at));
  if (Array.isArray(schema.anyOf) && !schema.anyOf.some((s) => validate(root, s as Schema, value, at).length === 0))
    fail('matches none of anyOf');
  return problems;
}

function arrayProblems(root: unknown, schema: Schema, value: unknown[], at: string): string[] {
  const problems: string[] = [];
  if (typeof schema.minItems === 'number' && value.length < schema.minItems)
    problems.push(`${at}: fewer than ${schema.minItems} items`);
  if (typeof schema.maxItems === 'number' && value.length > schema.maxItems)
    problems.push(`${at}: more than ${schema.maxItems} items`);
  if (isObject(schema.items))
    value.forEach((item, i) => problems.push(...validate(root, schema.items as Schema, item, `${at}[${i}]`)));
  return problems;
}

function objectProblems(root: unknown, schema: Schema, value: Record<string, unknown>, at: string): string[] {
  const problems: string[] = [];
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  for (const name of (schema.required ?? []) as string[]) if (!(name in value)) problems.push(`${at}: missing ${name}`);
  for (const [name, item] of Object.entries(value)) {
    const property = properties[name];
    if (property !== undefined) problems.push(...validate(root, property, item, `${at}.${name}`));
    else if (schema.additionalProperties === false) problems.push(`${at}: unexpected ${name}`);
  }
  return problems;
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'object':
      return isObject(value);
    case 'array':
      return Array.isArray(value);
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    default:
      return typeof value === type;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A local `#/a/b` reference. */
function resolve(root: unknown, ref: string): Schema {
  if (!ref.startsWith('#/')) throw new Error(`only local refs are checked: ${ref}`);
  let node = root;
  for (const part of ref.slice(2).split('/')) node = isObject(node) ? node[part] : undefined;
  if (!isObject(node)) throw new Error(`unresolved ref ${ref}`);
  return node;
}

/** Problems of one exchange against the description: its path, method, status, media type and body. */
export function exchangeProblems(spec: object, e: Exchange): string[] {
  const doc = spec as Doc;
  const where = `${e.method} ${e.path} -> ${e.status}`;
  const template = Object.keys(doc.paths).find((p) => new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(e.path));
  const operation = template === undefined ? undefined : doc.paths[template]?.[e.method.toLowerCase()];
  if (operation === undefined) return [`${where}: no such operation in the description`];
  const answer = operation.responses[String(e.status)] ?? operation.responses[`${String(e.status)[0]}XX`];
  if (answer === undefined)
    return [`${where}: status not described (described: ${Object.keys(operation.responses).join(', ')})`];
  const media = answer.content?.['application/json'];
  if (media === undefined) return e.body === '' ? [] : [`${where}: a body the description does not have`];
  if (!(e.contentType ?? '').startsWith('application/json'))
    return [`${where}: content-type ${e.contentType}, described application/json`];
  return validate(doc, media.schema, JSON.parse(e.body)).map((p) => `${where}: ${p}`);
}
