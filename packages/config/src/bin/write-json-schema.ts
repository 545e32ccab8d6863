#!/usr/bin/env node
// Writes the JSON Schema of config.yaml to the path given as the first argument
// (`npm run config:schema` at the repository root writes config.schema.json).
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { renderConfigJsonSchema } from '../json-schema.js';

const target = process.argv[2];
if (target === undefined || target === '') {
  process.stderr.write('usage: write-json-schema <output.json>\n');
  process.exit(2);
}
await writeFile(resolve(target), renderConfigJsonSchema());
process.stdout.write(`wrote ${resolve(target)}\n`);
