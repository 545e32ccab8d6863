/**
 * What an agent could carry into the next job of the same repository, probed with the real
 * parts (see bench-setup.ts) on small repositories with one dependency, so every install
 * takes a second or two. The agent's stand-in is a sandboxed run through the job's runner,
 * where the agent runs in pass 1: after prepare, before the install step. Each probe prints
 * what it found; the next job should see none of it.
 */
import { createHash } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { installStampFile } from '@codefleet/verify';
import { createNpmRepo, outcomeOf, runBenchJob, writeFromRun, type BenchJob, type Worker } from './bench-setup.js';

// One dependency without dependencies of its own: the planner installs only when there is one.
const manifest = { name: 'leftover-probe', version: '1.0.0', private: true, dependencies: { 'is-number': '7.0.0' } };
const files = { 'package.json': `${JSON.stringify(manifest, null, 2)}\n`, 'src/index.js': 'module.exports = {};\n' };

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

// The install stamp as @codefleet/verify computes it (run/install.ts, dependencyHash): what an
// agent that has read that code computes inside its sandbox. Should the two drift apart, the
// forged stamp stops matching and the probe prints that the install ran.
const dependencyFields = [
  'dependencies',
  'devDependencies',
  'optionalDependencies',
  'peerDependencies',
  'bundleDependencies',
  'overrides',
  'workspaces',
];
function forgedStamp(lock: string, manifestText: string): string {
  const parsed = JSON.parse(manifestText) as Record<string, unknown>;
  return createHash('sha256')
    .update('lockfile:package-lock.json\n')
    .update(lock)
    .update('\npackage.json:\n')
    .update(JSON.stringify(dependencyFields.map((field) => [field, parsed[field] ?? null])))
    .digest('hex');
}

const installWord = (job: BenchJob) =>
  job.install.skipped ? 'skipped' : job.install.passed ? 'ran' : `FAILED (exit ${String(job.install.exitCode)})`;
const found = async (job: BenchJob, path: string) =>
  `${path} ${(await exists(join(job.ws.dir, path))) ? 'PRESENT' : 'absent'}`;

/**
 * A job's first install in a fresh slot: `node_modules` is not there yet when the agent runs,
 * so nothing makes it read-only. The agent makes it, with a module of its own and a stamp
 * matching the lockfile.
 */
async function beforeTheFirstInstall(worker: Worker): Promise<void> {
  const repo = await createNpmRepo(worker, 'bench-probe-first', files);
  const planted = join('node_modules', 'planted.js');
  const lockfile = await readFile(join(repo.path, 'package-lock.json'), 'utf8');
  let agent = '';
  const first = await runBenchJob(worker, repo, 'probe-first-1', async (ws, runners) => {
    const stamp = `${forgedStamp(lockfile, files['package.json'])}\n`;
    const run = await writeFromRun({ ws }, runners.runner, worker, {
      [planted]: "module.exports = 'planted';\n",
      [join('node_modules', installStampFile)]: stamp,
    });
    agent = outcomeOf(run);
  });
  console.log(
    `  the agent of a slot's first job writes node_modules before the install (${agent}); the install ${installWord(first)}; ${await found(first, planted)}`,
  );
  await first.ws.release();
  const second = await runBenchJob(worker, repo, 'probe-first-2');
  console.log(`    the next job: install ${installWord(second)}; ${await found(second, planted)}`);
  await second.ws.release();
}

/**
 * The repository's own lifecycle scripts run in the install step, which may write
 * `node_modules`; `scripts` is not part of the stamp's hash. Then a nested `node_modules`,
 * which is kept between jobs like the top one but is writable for every run.
 */
async function throughInstallScripts(worker: Worker): Promise<void> {
  const repo = await createNpmRepo(worker, 'bench-probe-scripts', files);
  const planted = join('node_modules', 'planted-by-postinstall.js');
  const postinstall = `node -e "require('fs').mkdirSync('node_modules',{recursive:true});require('fs').writeFileSync('${planted}','planted')"`;
  const edited = `${JSON.stringify({ ...manifest, scripts: { postinstall } }, null, 2)}\n`;
  let agent = '';
  const first = await runBenchJob(worker, repo, 'probe-scripts-1', async (ws, runners) => {
    agent = outcomeOf(await writeFromRun({ ws }, runners.runner, worker, { 'package.json': edited }));
  });
  console.log(
    `  the agent adds a postinstall script to package.json (${agent}); the install ${installWord(first)}; ${await found(first, planted)}`,
  );
  await first.ws.release();

  const nested = join('src', 'node_modules', 'lodash', 'index.js');
  let nestedWrite = '';
  const second = await runBenchJob(worker, repo, 'probe-scripts-2', async (ws, runners) => {
    nestedWrite = outcomeOf(
      await writeFromRun({ ws }, runners.runner, worker, { [nested]: "module.exports = 'planted';\n" }),
    );
  });
  const reset =
    (await readFile(join(second.ws.dir, 'package.json'), 'utf8')) === files['package.json']
      ? 'as committed'
      : 'STILL EDITED';
  console.log(
    `    the next job: package.json ${reset}; install ${installWord(second)}; ${await found(second, planted)}`,
  );
  console.log(
    `    its agent writes a nested node_modules (require('lodash') from src/ finds it first): ${nestedWrite}`,
  );
  await second.ws.release();
  const third = await runBenchJob(worker, repo, 'probe-scripts-3');
  console.log(`    the job after: install ${installWord(third)}; ${await found(third, nested)}`);
  await third.ws.release();
}

/** Prints what an agent's writes leave for the next job of the same repository. */
export async function probeLeftovers(worker: Worker): Promise<void> {
  console.log('what an agent can leave for the next job (PRESENT in a next job: carried over):');
  await beforeTheFirstInstall(worker);
  await throughInstallScripts(worker);
}
