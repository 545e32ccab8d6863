/**
 * `npm run bench` (pipeline): the second job's prepare + install on the same repository
 * against the first's, with the parts a worker runs: pooled working copies
 * (`createWorkspaceManager`, reuse on), the sandbox (`openSandbox`, mode auto: bubblewrap on
 * Linux), the job's runners (`jobRunners`: only install steps may write `node_modules`) and
 * the verifier's install step (`planVerification`, `runVerification` build-only, given the
 * install step alone).
 *
 * The repository is the dependency set of the verify bench's app-sized sample (React, zod,
 * date-fns, lodash, axios; eslint with typescript-eslint and react-hooks, jest with ts-jest,
 * prettier: ~590 packages from the npm registry); its sources play no part in an install.
 * The repository is a local one, so a cold mirror costs a local clone, no network.
 * - job 1: cold mirror, new pool slot, `npm ci` in the sandbox. Every sandboxed run has a
 *   fresh HOME, so npm's cache is empty there: this is every first install's real cost, not
 *   a worst case;
 * - job 2, same repository: the slot reset, the stamp in `node_modules` matches the
 *   lockfile, so the install is skipped;
 * - job 3: the repository's lockfile changed (one dependency added): `npm ci` again, cold;
 * - job 4: the same lockfile as job 3: skipped again, if job 3 installed.
 * Between jobs 1 and 2 a run writes what commands leave behind (build output, a virtualenv,
 * caches, an untracked file) and tries `node_modules`; job 2 lists what of it is still
 * there. Then leftovers.ts probes what an agent could carry into the next job.
 * Prints times, ratios and findings; asserts nothing.
 */
import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTempDir } from '@codefleet/testkit';
import {
  createNpmRepo,
  lockAndCommit,
  openWorker,
  outcomeOf,
  passed,
  runBenchJob,
  runIn,
  shown,
  writeFromRun,
  type BenchJob,
  type Worker,
} from './bench-setup.js';
import { probeLeftovers } from './leftovers.js';

// The app-sized sample's dependencies (../samples/app-sized-sample.ts).
const manifest = {
  name: 'second-job-bench-sample',
  version: '1.0.0',
  private: true,
  dependencies: {
    axios: '1.13.2',
    'date-fns': '4.1.0',
    lodash: '4.17.21',
    react: '19.2.0',
    'react-dom': '19.2.0',
    zod: '4.1.12',
  },
  devDependencies: {
    '@eslint/js': '9.39.1',
    '@types/jest': '30.0.0',
    '@types/lodash': '4.17.20',
    '@types/node': '22.20.5',
    '@types/react': '19.2.2',
    '@types/react-dom': '19.2.2',
    eslint: '9.39.1',
    'eslint-plugin-react-hooks': '7.0.1',
    jest: '30.2.0',
    prettier: '3.10.1',
    'ts-jest': '29.4.5',
    typescript: '5.9.3',
    'typescript-eslint': '8.46.2',
  },
  // As in the sample: unrs-resolver 1.13.0 names per-platform bindings the registry does not
  // all have, and npm then writes a lockfile `npm ci` rejects (npm/cli#9846).
  overrides: { 'unrs-resolver': '1.12.2' },
};
const manifestText = (extra: Record<string, string> = {}) =>
  `${JSON.stringify({ ...manifest, dependencies: { ...manifest.dependencies, ...extra } }, null, 2)}\n`;

// What repository commands and agents leave in a copy besides the source: written by a
// sandboxed run in job 1, looked for in job 2. The cache inside node_modules is a scratch
// mount of the job's own.
const leftovers = [
  'dist/bundle.js',
  '.venv/pyvenv.cfg',
  'target/out.bin',
  '.cache/tool/state',
  'untracked.txt',
  'node_modules/.cache/tool/state',
];

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

async function packageCount(dir: string): Promise<number> {
  const lock = JSON.parse(await readFile(join(dir, 'package-lock.json'), 'utf8')) as {
    packages?: Record<string, unknown>;
  };
  return Object.keys(lock.packages ?? {}).filter((key) => key !== '').length;
}

function row(label: string, job: BenchJob): void {
  const install = job.install.skipped
    ? 'skipped: stamp matches'
    : job.install.passed
      ? `npm ci ${shown(job.install.durationMs)}`
      : `FAILED: ${firstError(job.install.outputTail)}`;
  console.log(
    `  ${label.padEnd(40)} prepare ${shown(job.prepareMs).padStart(8)}   plan ${shown(job.planMs).padStart(6)}   install ${shown(job.installMs).padStart(8)} (${install})`,
  );
}

const firstError = (output: string) =>
  output
    .split('\n')
    .find((line) => / error /.test(line) && !/ error (code|errno|syscall|path) /.test(line))
    ?.trim() ??
  output.trim().split('\n')[0] ??
  '';
const total = (job: BenchJob) => job.prepareMs + job.installMs;

/** `node_modules` from inside the job's runs: the runner must be refused, the install runner not. */
async function probeReadOnly(worker: Worker, job: BenchJob): Promise<void> {
  const touch = ['sh', '-c', 'touch node_modules/written-by-a-run && rm -f node_modules/written-by-a-run'];
  console.log(
    `    a run (agent, build, test) writes node_modules:   ${outcomeOf(await runIn(job, job.runners.runner, worker, touch))}  (expected: refused)`,
  );
  console.log(
    `    the install runner writes node_modules:           ${outcomeOf(await runIn(job, job.runners.installRunner, worker, touch))}  (expected: exit 0)`,
  );
}

const root = await createTempDir('bench-second-job');
let worker: Worker | undefined;
try {
  worker = await openWorker(root);
  console.log(worker.sandbox.description);
  const repo = await createNpmRepo(worker, 'bench-second-job-repo', {
    'package.json': manifestText(),
    'src/index.js': 'module.exports = {};\n',
  });
  console.log(
    `second job on the same repository: the app-sized dependency set, ${await packageCount(repo.path)} packages in the lockfile`,
  );

  const first = passed(await runBenchJob(worker, repo, 'bench-job-1'), 'job 1');
  const written = await writeFromRun(
    first,
    first.runners.runner,
    worker,
    Object.fromEntries(leftovers.map((path) => [path, 'written by a run in job 1\n'])),
  );
  console.log('  job 1, after the install:');
  await probeReadOnly(worker, first);
  console.log(`    a run writes build output, caches, a file:       ${outcomeOf(written)}`);
  let started = performance.now();
  await first.ws.release();
  const release1 = performance.now() - started;

  const second = passed(await runBenchJob(worker, repo, 'bench-job-2'), 'job 2');
  if (second.ws.dir !== first.ws.dir)
    console.log(`  note: job 2 got another copy (${second.ws.dir}), not the pooled slot`);
  const kept = [];
  for (const path of leftovers) if (await exists(join(second.ws.dir, path))) kept.push(path);
  console.log('  job 2, after the install:');
  await probeReadOnly(worker, second);
  console.log(
    `    left by job 1's run and still here: ${kept.length === 0 ? 'nothing' : kept.join(', ')}  (of ${leftovers.join(', ')})`,
  );
  started = performance.now();
  await second.ws.release();
  const release2 = performance.now() - started;

  // The repository moves on: one dependency added, so the lockfile differs. Then one more
  // job on the same lockfile: the pooled slot's state after an install of a changed lockfile.
  await writeFile(join(repo.path, 'package.json'), manifestText({ 'is-number': '7.0.0' }));
  await lockAndCommit(worker, repo, 'add is-number');
  const third = await runBenchJob(worker, repo, 'bench-job-3');
  await third.ws.release();
  const fourth = await runBenchJob(worker, repo, 'bench-job-4');
  await fourth.ws.release();

  console.log('times (install: the step as the pipeline runs it, sandbox and job view included):');
  row('job 1: cold mirror, new slot', first);
  row('job 2: same repository, pooled slot', second);
  row('job 3: lockfile changed, pooled slot', third);
  row('job 4: same lockfile as job 3', fourth);
  console.log(`  release: job 1 ${shown(release1)}, job 2 ${shown(release2)}`);
  console.log(
    `  ratio (job 2 prepare + install) / (job 1 prepare + install): ${(total(second) / total(first)).toFixed(4)}×`,
  );
  const ratio = (job: BenchJob) =>
    job.install.passed ? `${(total(job) / total(first)).toFixed(4)}×` : 'none, its install failed';
  console.log(`  ratio (job 3 prepare + install) / (job 1 prepare + install): ${ratio(third)}`);
  console.log(`  ratio (job 4 prepare + install) / (job 1 prepare + install): ${ratio(fourth)}`);
  console.log(
    '  npm runs with a fresh HOME in the sandbox, so every install that runs starts from an empty npm cache.',
  );

  await probeLeftovers(worker);
} finally {
  for (const repo of worker?.repos ?? []) await repo.dispose();
  await root.dispose();
}
