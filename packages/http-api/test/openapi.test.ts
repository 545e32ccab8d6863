import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { openApiDocument } from '../src/index.js';

const committed = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));

describe('docs/openapi.json', () => {
  it('is the description the API serves (regenerate: npm run openapi -w @codefleet/http-api)', () => {
    expect(JSON.parse(readFileSync(committed, 'utf8'))).toEqual(openApiDocument());
  });

  it('describes every route with the schemas the server validates with', () => {
    const doc = openApiDocument() as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths).sort()).toEqual(['/v1/jobs', '/v1/jobs/{id}', '/v1/jobs/{id}/cancel', '/v1/openapi.json']);
  });
});
