#!/usr/bin/env node
// Writes the OpenAPI description to the path given (the repository keeps docs/openapi.json);
// a test fails when the committed file and openApiDocument() differ.
import { writeFileSync } from 'node:fs';
import { openApiDocument } from '../openapi.js';

const target = process.argv[2];
if (target === undefined) {
  process.stderr.write('usage: write-openapi <file>\n');
  process.exit(2);
}
writeFileSync(target, `${JSON.stringify(openApiDocument(), null, 2)}\n`);
