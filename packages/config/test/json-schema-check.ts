// A small JSON Schema checker for the keywords our generated schema uses, so the test can
// check the sample config against the schema without a validator dependency.
type Schema = Record<string, unknown>;

/** Error messages (`path: reason`) for `value` against `schema`; empty when it conforms. */
export function checkAgainstSchema(value: unknown, schema: Schema, path = '$'): string[] {
  if (Array.isArray(schema.anyOf)) {
    const branches = (schema.anyOf as Schema[]).map((branch) => checkAgainstSchema(value, branch, path));
    return branches.some((errors) => errors.length === 0)
      ? []
      : [`${path}: matches no anyOf branch (${branches.flat().join('; ')})`];
  }
  const errors: string[] = [];
  const type = schema.type;
  if (type !== undefined && !hasType(value, String(type)))
    return [`${path}: expected ${String(type)}, got ${JSON.stringify(value)}`];
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) errors.push(`${path}: not in enum`);
  if (typeof value === 'string') {
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern).test(value))
      errors.push(`${path}: does not match pattern`);
    if (typeof schema.minLength === 'number' && value.length < schema.minLength) errors.push(`${path}: too short`);
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) errors.push(`${path}: below minimum`);
    if (typeof schema.maximum === 'number' && value > schema.maximum) errors.push(`${path}: above maximum`);
  }
  if (Array.isArray(value) && typeof schema.items === 'object' && schema.items !== null) {
    value.forEach((item, i) => errors.push(...checkAgainstSchema(item, schema.items as Schema, `${path}[${i}]`)));
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const [key, item] of Object.entries(value)) {
      const sub = properties[key];
      if (sub !== undefined) errors.push(...checkAgainstSchema(item, sub, `${path}.${key}`));
      else if (schema.additionalProperties === false) errors.push(`${path}.${key}: not allowed`);
    }
  }
  return errors;
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
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
