/**
 * The projects the verify-overhead figure runs (see ../verify-overhead.ts): their manifests and files,
 * written into a temp dir as a repository.
 */
import { appSized } from './app-sized-sample.js';

export interface Sample {
  name: string;
  /** package.json beyond its name and version: module type, scripts, dependency fields. */
  manifest: Record<string, unknown>;
  files: Record<string, string>;
  /** The source file the 2nd job changes by one line. */
  edit: string;
}

const sources: Record<string, string> = {
  'tsconfig.json': `${JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      strict: true,
      skipLibCheck: true,
      outDir: 'dist',
      rootDir: '.',
      types: ['node'],
    },
    include: ['src', 'test'],
  })}\n`,
  'src/math.ts': [
    'export function add(a: number, b: number): number {',
    '  return a + b;',
    '}',
    '',
    'export function mean(values: readonly number[]): number {',
    '  return values.reduce(add, 0) / values.length;',
    '}',
    '',
  ].join('\n'),
  'src/text.ts': [
    'export function slug(title: string): string {',
    '  return title',
    '    .toLowerCase()',
    '    .replace(/[^a-z0-9]+/g, "-")',
    '    .replace(/^-|-$/g, "");',
    '}',
    '',
  ].join('\n'),
  'test/math.test.ts': [
    'import assert from "node:assert/strict";',
    'import { test } from "node:test";',
    'import { add, mean } from "../src/math.js";',
    'import { slug } from "../src/text.js";',
    '',
    'test("add", () => assert.equal(add(2, 3), 5));',
    'test("mean", () => assert.equal(mean([1, 2, 3]), 2));',
    'test("slug", () => assert.equal(slug("Hello, World!"), "hello-world"));',
    '',
  ].join('\n'),
};

const nodeTestScripts = (lint: string) => ({ build: 'tsc -p .', lint, test: 'node --test dist/test/' });

// The smallest project that has a build, a linter and tests; one with the usual TypeScript
// lint stack, whose larger dependency tree is what most repositories install; the app above.
export const samples: Sample[] = [
  {
    name: 'small: typescript, prettier, @types/node',
    manifest: {
      type: 'module',
      scripts: nodeTestScripts('prettier --check src test'),
      devDependencies: { '@types/node': '22.20.5', prettier: '3.10.1', typescript: '5.9.3' },
    },
    files: sources,
    edit: 'src/math.ts',
  },
  {
    name: 'typical: + eslint, @eslint/js, typescript-eslint',
    manifest: {
      type: 'module',
      scripts: nodeTestScripts('eslint src test'),
      devDependencies: {
        '@eslint/js': '9.39.1',
        '@types/node': '22.20.5',
        eslint: '9.39.1',
        typescript: '5.9.3',
        'typescript-eslint': '8.46.2',
      },
    },
    files: {
      ...sources,
      'eslint.config.js': [
        'import js from "@eslint/js";',
        'import tseslint from "typescript-eslint";',
        '',
        'export default tseslint.config(js.configs.recommended, ...tseslint.configs.recommended);',
        '',
      ].join('\n'),
    },
    edit: 'src/math.ts',
  },
  appSized,
];
