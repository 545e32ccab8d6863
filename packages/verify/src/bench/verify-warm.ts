/**
 * `npm run bench` (verify): the 2nd job's verify time in a pooled working copy against the
 * 1st. Each sample, a TypeScript project with real dependencies from the npm registry, is
 * verified in a fresh copy (npm ci + build + lint + test), then again in the same copy after
 * a one-line source change (node_modules kept, stamp matches, install skipped). A second
 * fresh copy is verified once the npm cache is warm, the baseline on a host that has run
 * jobs before. Prints times and ratios (target 2nd/1st ≤ 0.2×); asserts nothing.
 *
 * Three samples. "small" and "typical" are the smallest projects with a build, a linter and
 * tests: their installs take seconds, so tool start-up (tsc alone ≈ 1 s) sets the floor of
 * the 2nd verify and of the ratio. "app-sized" is what a mid-size TypeScript application
 * installs and runs (React, zod, date-fns, lodash, axios; eslint with typescript-eslint and
 * react-hooks, jest with ts-jest, prettier: ~560 packages): the issue measures the 2nd job
 * against the 1st on a real-sized repository, where installing dependencies is most of a
 * fresh copy's verify. The samples share one npm cache, in order, so a later sample's "cold"
 * install finds what an earlier one fetched (typescript, eslint, ...) already cached.
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '@codefleet/config';
import { runProcess } from '@codefleet/process';
import { createTempDir, writeFiles } from '@codefleet/testkit';
import { feedbackFor, planVerification, runVerification, type StepResult } from '../index.js';
import { samples, type Sample } from './samples.js';

function manifest(sample: Sample): string {
  const pkg = { name: 'verify-bench-sample', version: '1.0.0', private: true, ...sample.manifest };
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
  const source = join(copy, sample.edit);
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
