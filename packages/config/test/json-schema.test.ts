import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { parse as parseYaml } from 'yaml';
import { configJsonSchema, renderConfigJsonSchema } from '../src/index.js';
import { checkAgainstSchema } from './json-schema-check.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
type Schema = Record<string, unknown>;

/** The subschema at a dotted property path. */
function at(schema: Schema, path: string): Schema {
  let current = schema;
  for (const key of path.split('.')) {
    const properties = current.properties as Record<string, Schema> | undefined;
    const next = properties?.[key];
    if (next === undefined) throw new Error(`no property ${key} in ${path}`);
    current = next;
  }
  return current;
}

describe('configJsonSchema', () => {
  const schema = configJsonSchema();

  it('is a draft 2020-12 schema that forbids unknown keys', () => {
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.additionalProperties).toBe(false);
    expect(at(schema, 'queue.sqs').additionalProperties).toBe(false);
  });

  it('carries descriptions and defaults', () => {
    expect(at(schema, 'queue.sqs.wait_time_seconds')).toMatchObject({
      default: 20,
      description: expect.stringContaining('Long-polling'),
    });
    expect(at(schema, 'queue.sqs.visibility_timeout').default).toBe(3600);
    expect(at(schema, 'worker.max_retries')).toMatchObject({
      default: 3,
      description: expect.stringContaining('Outer retries'),
    });
    expect(at(schema, 'patch.protected_patterns').default).toEqual(['.env*', '*credentials*', '*.key', '*.pem']);
    expect(at(schema, 'verification.toolchains.go.lint').default).toEqual(['go', 'vet', './...']);
    expect(at(schema, 'agents.default').anyOf).toContainEqual(
      expect.objectContaining({ enum: expect.arrayContaining(['claude', 'script']) }),
    );
  });

  it('lets numbers, booleans and enums hold ${VAR} references', () => {
    const wait = at(schema, 'queue.sqs.wait_time_seconds');
    expect(checkAgainstSchema('${SQS_WAIT:-20}', wait)).toEqual([]);
    expect(checkAgainstSchema(21, wait)).not.toEqual([]);
    expect(checkAgainstSchema('abc', wait)).not.toEqual([]);
  });

  it('has no token field: tokens come from the environment', () => {
    expect(Object.keys(at(schema, 'forge.github').properties as object)).not.toContain('token');
    expect(at(schema, 'forge.github.token_env').default).toBe('GITHUB_TOKEN');
  });

  it('accepts the sample config.yaml and rejects broken ones', async () => {
    const sample: unknown = parseYaml(await readFile(`${ROOT}config.yaml`, 'utf8'));
    expect(checkAgainstSchema(sample, schema)).toEqual([]);
    expect(
      checkAgainstSchema({ queue: { sqs: { visiblity_timeout: 1 } }, worker: { concurrency: 'x' } }, schema),
    ).toEqual([
      '$.queue.sqs.visiblity_timeout: not allowed',
      expect.stringContaining('$.worker.concurrency: matches no anyOf branch'),
    ]);
  });

  it('matches the committed config.schema.json (run `npm run config:schema` after schema changes)', async () => {
    const committed = await readFile(`${ROOT}config.schema.json`, 'utf8');
    expect(committed).toBe(renderConfigJsonSchema());
  });
});
