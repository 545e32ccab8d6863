import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { openApiDocument } from '../src/index.js';
import { exchangeProblems, validate } from './openapi-check.js';

const committed = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));

describe('docs/openapi.json', () => {
  it('is the description the API serves (regenerate: npm run openapi -w @codefleet/http-api)', () => {
    expect(JSON.parse(readFileSync(committed, 'utf8'))).toEqual(openApiDocument());
  });

  it('describes every route with the schemas the server validates with', () => {
    const doc = openApiDocument() as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/v1/jobs',
      '/v1/jobs/{id}',
      '/v1/jobs/{id}/cancel',
      '/v1/openapi.json',
    ]);
  });

  it('is checked by a validator that finds what does not match (the check of every answer in api.test.ts)', () => {
    const doc = openApiDocument();
    const answer = (status: number, body: unknown, path = '/v1/jobs/api-1') =>
      exchangeProblems(doc, {
        method: 'GET',
        path,
        status,
        contentType: 'application/json; charset=utf-8',
        body: JSON.stringify(body),
      });
    const links = { self: '/v1/jobs/api-1', cancel: '/v1/jobs/api-1/cancel' };
    expect(answer(200, { id: 'api-1', status: 'queued', repo: 'a/b', attempts: 0, links })).toEqual([]);
    expect(answer(418, { error: 'teapot', message: 'no' })).toEqual([expect.stringContaining('status not described')]);
    expect(answer(200, { id: 'api-1', status: 'exploded', repo: 'a/b', attempts: -1, links })).toEqual([
      expect.stringContaining('$.status: "exploded" is not one of'),
      expect.stringContaining('$.attempts: below 0'),
    ]);
    expect(answer(404, { message: 'no error code' })).toEqual([expect.stringContaining('missing error')]);
    expect(answer(200, {}, '/v2/elsewhere')).toEqual([expect.stringContaining('no such operation')]);
    expect(() => validate({}, { type: 'string', format: 'uri' }, 'x')).toThrow('does not know format');
  });
});
