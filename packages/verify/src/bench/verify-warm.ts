/**
 * `npm run bench` (verify): the 2nd job's verify time in a pooled working copy against the
 * 1st. Small TypeScript projects with real dev dependencies from the npm registry are
 * verified in a fresh copy (npm ci + build + lint + test), then again in the same copy after
 * a one-line source change (node_modules kept, stamp matches, install skipped). A second
 * fresh copy is verified once the npm cache is warm, the baseline on a host that has run
 * jobs before. Prints times and ratios (target 2nd/1st ≤ 0.2×); asserts nothing.
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '@codefleet/config';
import { runProcess } from '@codefleet/process';
import { createTempDir, writeFiles } from '@codefleet/testkit';
import { feedbackFor, planVerification, runVerification, type StepResult } from '../index.js';

interface Sample {
  name: string;
  devDependencies: Record<string, string>;
  lint: string;
  files: Record<string, string>;
}

const sources: Record<string, string> = {
  'tsconfig.json': `${JSON.stringify({
    compilerOptions: {
      target: 'ES2022', module: 'NodeNext', strict: true, skipLibCheck: true, outDir: 'dist', rootDir: '.', types: ['node'],
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

// Two real projects: the smallest that has a build, a linter and tests, and one with the
// usual TypeScript lint stack, whose larger dependency tree is what most repositories install.
const samples: Sample[] = [
  {
    name: 'small: typescript, prettier, @types/node',
    devDependencies: { '@types/node': '22.20.5', prettier: '3.10.1', typescript: '5.9.3' },
    lint: 'prettier --check src test',
    files: sources,
  },
  {
    name: 'typical: + eslint, @eslint/js, typescript-eslint',
    devDependencies: {
      '@eslint/js': '9.39.1', '@types/node': '22.20.5', eslint: '9.39.1', typescript: '5.9.3', 'typescript-eslint': '8.46.2',
    },
    lint: 'eslint src test',
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
  },
];

function manifest(sample: Sample): string {
  const scripts = { build: 'tsc -p .', lint: sample.lint, test: 'node --test dist/test/' };
  const pkg = { name: 'verify-bench-sample', version: '1.0.0', private: true, type: 'module', scripts, devDependencies: sample.devDependencies };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

const root = await createTempDir('bench-verify');
// The worker passes a complete environment; drop what `npm run bench` itself injected.
const baseEnv = Object.fromEntries(
  Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined && !/^npm_/i.test(entry[0])),
);
const env = { ...baseEnv, npm_config_cache: join(root.path, 'npm-cache'), npm_config_update_notifier: 'false' };
const { verification } = parseConfig('', { env: {}, baseDir: root.path, hostname: hostname() }).config;
const timeoutMs = verification.step_timeout_seconds * 1000;

async function verify(workdir: string): Promise<{ ms: number; results: StepResult[] }> {
  const started = performance.now();
  const plan = await planVerification(workdir, { config: verification });
  const outcome = await runVerification(workdir, plan.steps, { env, timeoutMs });
  const ms = performance.now() - started;
  if (outcome.failed) throw new Error(`bench verify failed in ${workdir}:\n${feedbackFor(outcome.failed)}`);
  return { ms, results: outcome.results };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const steps = (results: StepResult[]) =>
  results.map((step) => `${step.name} ${step.skipped ? 'skipped' : seconds(step.durationMs)}`).join(' · ');

async function bench(sample: Sample, index: number): Promise<void> {
  // The "repository": sources plus a committed lockfile (resolved once, not timed).
  const repo = join(root.path, `repo-${index}`);
  await writeFiles(repo, { ...sample.files, 'package.json': manifest(sample) });
  const lock = await runProcess(['npm', 'install', '--package-lock-only', '--no-audit', '--no-fund'], { cwd: repo, env, timeoutMs });
  if (lock.exitCode !== 0) throw new Error(`npm install --package-lock-only failed:\n${lock.outputTail}`);

  const copy = `${repo}-copy-1`;
  await cp(repo, copy, { recursive: true });
  const first = await verify(copy);

  // The next job in the same pooled copy: a small source change, node_modules kept.
  const source = join(copy, 'src/math.ts');
  await writeFile(source, `${await readFile(source, 'utf8')}\nexport const answer = 42;\n`);
  const second = await verify(copy);

  const fresh = `${repo}-copy-2`;
  await cp(repo, fresh, { recursive: true });
  const warmCache = await verify(fresh);

  console.log(`verify, sample ${sample.name}`);
  console.log(`  1st verify, fresh copy, cold npm cache  ${seconds(first.ms)}  (${steps(first.results)})`);
  console.log(`  2nd verify, same copy after an edit     ${seconds(second.ms)}  (${steps(second.results)})`);
  console.log(`  1st verify, fresh copy, warm npm cache  ${seconds(warmCache.ms)}  (${steps(warmCache.results)})`);
  console.log(`  ratio 2nd / 1st: ${(second.ms / first.ms).toFixed(3)}× (target ≤ 0.2×); against the warm-cache 1st: ${(second.ms / warmCache.ms).toFixed(3)}×`);
}

try {
  for (const [index, sample] of samples.entries()) await bench(sample, index);
} finally {
  await root.dispose();
}
