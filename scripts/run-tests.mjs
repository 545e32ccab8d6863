#!/usr/bin/env node
// `npm test`: builds what the tests need (scripts/transpile.mjs), runs every workspace's jest suite, the
// longest first and several at once, then prints the ten slowest test files and one summary
// line `N passed, N failed` from the jest JSON reports. A suite that could not run (a compile
// error, a crash) counts as a failure, so nothing fails silently. `--filter=<package>`
// (repeatable, e.g. `--filter=@codefleet/patch`) runs only those workspaces' suites.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const filters = process.argv.slice(2).flatMap((arg) => (arg.startsWith('--filter=') ? [arg.slice(9)] : []));
const nameOf = (dir) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name;
const workspaces = ['packages', 'apps']
  .flatMap((group) => {
    const dir = join(root, group);
    return existsSync(dir) ? readdirSync(dir).map((name) => join(dir, name)) : [];
  })
  .filter((dir) => {
    const manifest = join(dir, 'package.json');
    return existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).scripts?.test;
  })
  .filter((dir) => filters.length === 0 || filters.includes(nameOf(dir)));
if (workspaces.length === 0) {
  console.log(`npm test: no workspace matches ${filters.join(', ')}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}

for (const dir of workspaces) rmSync(join(dir, '.jest-results.json'), { force: true });

// What the tests start for real: redis-server and redis-cli (the BullMQ, SQS-coordination
// and run-store tests; an agent's forge attempt), bubblewrap (the sandbox the agents and
// checks run in), prlimit (its per-process limits), curl (what agents reach the network
// with, through the sandbox's proxy) and chromium (the dashboard's browser test). Installed here when missing, as .ci/run does, so
// `npm ci && npm test` works on a fresh machine of this image.
provision({
  'redis-server': 'redis-server',
  'redis-cli': 'redis-tools',
  bwrap: 'bubblewrap',
  prlimit: 'util-linux',
  curl: 'curl',
  chromium: 'chromium',
});

// The suites by the wall time they took in full runs (`npm test` prints the slowest files),
// longest first; a workspace not listed starts after these. Order only: a stale list costs
// minutes, never a result.
const longestFirst = [
  'packages/pipeline',
  'apps/cli',
  'packages/agents',
  'packages/workspace',
  'packages/patch',
  'packages/github',
  'packages/verify',
  'packages/chaos',
  'packages/queue',
  'packages/forge',
  'packages/dashboard',
  'packages/slack',
  'packages/worker',
  'packages/sandbox',
];
// Suites run side by side: most of their time is spent waiting on processes they start
// (git, bubblewrap, redis), so more than the machine's cores keep it busy.
const concurrency = 10;
// Node 22.1+ keeps the code it compiled in NODE_COMPILE_CACHE, so the node processes the suites
// start (jest and its workers, the CLI, fixtures, npm) skip compiling what an earlier one
// did. Only there (Node 20 has none), and unless the caller chose a cache: then one directory
// per run, removed at its end.
const compileCache =
  typeof module.enableCompileCache === 'function' && process.env.NODE_COMPILE_CACHE === undefined
    ? mkdtempSync(join(tmpdir(), 'codefleet-ncc-'))
    : '';
const suiteEnv = compileCache === '' ? process.env : { ...process.env, NODE_COMPILE_CACHE: compileCache };
// The build (every workspace's dist, which the suites import): one process, see transpile.mjs.
const build = spawnSync(process.execPath, [join(root, 'scripts', 'transpile.mjs')], { cwd: root, stdio: 'inherit' });
const exits = build.status === 0 ? await runSuites(workspaces) : [];
if (compileCache !== '') rmSync(compileCache, { recursive: true, force: true });

let passed = 0;
let failed = 0;
const problems = [];
const durations = [];
for (const dir of workspaces) {
  const name = dir.slice(root.length);
  const report = join(dir, '.jest-results.json');
  if (!existsSync(report)) {
    failed += 1;
    problems.push(`${name}: no test report (the suite did not run; see the output above)`);
    continue;
  }
  const results = JSON.parse(readFileSync(report, 'utf8'));
  passed += results.numPassedTests;
  failed += results.numFailedTests;
  for (const suite of results.testResults) {
    // A suite that could not run may carry no start time: it has no duration to rank.
    if (suite.startTime > 0)
      durations.push({ file: `${name}/${suite.name.slice(dir.length + 1)}`, ms: suite.endTime - suite.startTime });
    const failures = suite.assertionResults.filter((a) => a.status === 'failed');
    if (suite.status === 'failed' && failures.length === 0) {
      failed += 1;
      problems.push(
        `${name}: ${suite.name.slice(dir.length + 1)} could not run: ${suite.message.split('\n').find((l) => l.trim()) ?? ''}`,
      );
    }
    for (const failure of failures)
      problems.push(`${name}: ${failure.fullName}${gist(failure.failureMessages?.[0] ?? '')}`);
  }
}
if (build.status !== 0) {
  failed += 1;
  problems.push(`the build failed (transpile exited with ${build.status ?? build.signal}); no suite ran`);
}
// A suite whose jest exited non-zero with no failing test in its report (a crash after the
// tests) still fails the run.
const nonZero = exits.filter(({ code }) => code !== 0).map(({ dir }) => dir.slice(root.length));
if (nonZero.length > 0 && failed === 0) {
  failed += 1;
  problems.push(`${nonZero.join(', ')}: jest exited non-zero though no test failed (see the output above)`);
}
printSlowest(durations, 10);
if (problems.length > 0) console.log(`\nFailures:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);

// The start of a failure's message, indented under its name: a CI log is often read only from
// its tail, and the name alone does not say why (a property test's seed, an expected value).
function gist(message) {
  const lines = message
    // eslint-disable-next-line no-control-regex
    .replace(/\u001b\[[0-9;]*m/g, '')
    .split('\n')
    .filter((line) => line.trim() !== '' && !/^\s+at /.test(line))
    .slice(0, 8)
    .map((line) => `      ${line.trim().slice(0, 200)}`);
  return lines.length === 0 ? '' : `\n${lines.join('\n')}`;
}

// The files that cost the suite most, so a new slow test shows up in the run that added it.
// Wall times: under load they overstate, but the order is what tells where to look.
function printSlowest(durations, count) {
  const slowest = durations
    .filter((d) => Number.isFinite(d.ms))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, count);
  if (slowest.length === 0) return;
  console.log(`\nSlowest test files:`);
  for (const { file, ms } of slowest) console.log(`  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}`);
}

/**
 * Runs each workspace's `npm test` (its jest writes `.jest-results.json`), `concurrency` at a
 * time, and prints each one's output as one block when it ends. The suites that take longest
 * start first: the run ends when the longest chain does, and started last (as turbo, which
 * knows no durations, happened to start it) the pipeline's suite alone added minutes.
 * Resolves each workspace's exit code.
 */
async function runSuites(dirs) {
  const rank = (dir) => {
    const at = longestFirst.indexOf(dir.slice(root.length));
    return at === -1 ? longestFirst.length : at;
  };
  const queue = [...dirs].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const exits = [];
  const worker = async () => {
    for (let dir = queue.shift(); dir !== undefined; dir = queue.shift()) exits.push(await runSuite(dir));
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return exits;
}

/** One workspace's `npm test`, its output kept and printed as one block when it ends. */
function runSuite(dir) {
  const name = nameOf(dir);
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', 'test', '--silent'], {
      cwd: dir,
      env: suiteEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks = [];
    child.stdout.on('data', (chunk) => chunks.push(chunk));
    child.stderr.on('data', (chunk) => chunks.push(chunk));
    child.on('close', (code, signal) => {
      const seconds = Math.round((Date.now() - started) / 1000);
      const text = Buffer.concat(chunks).toString('utf8').trimEnd();
      const prefixed = text === '' ? [] : text.split('\n').map((line) => `${name}:test: ${line}`);
      console.log(
        [`\n── ${name}: ${code === 0 ? 'passed' : `exit ${code ?? signal}`} in ${seconds} s`, ...prefixed].join('\n'),
      );
      resolve({ dir, code: code ?? 1 });
    });
  });
}

function provision(programs) {
  if (process.platform !== 'linux') return;
  const onPath = (program) =>
    spawnSync('sh', ['-c', 'command -v "$1"', 'sh', program], { stdio: 'ignore' }).status === 0;
  const missing = Object.entries(programs)
    .filter(([program]) => !onPath(program))
    .map(([, pkg]) => pkg);
  if (missing.length === 0) return;
  const root = process.getuid?.() === 0;
  const asRoot = (argv) => (root ? argv : ['sudo', '-n', ...argv]);
  console.log(`npm test: installing ${missing.join(' ')} (apt-get)`);
  const run = (argv) =>
    spawnSync(argv[0], argv.slice(1), { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
      .status === 0;
  const ok =
    run(asRoot(['apt-get', 'install', '-y', '-qq', ...missing])) ||
    (run(asRoot(['apt-get', 'update', '-qq'])) && run(asRoot(['apt-get', 'install', '-y', '-qq', ...missing])));
  if (!ok)
    console.log(
      `npm test: could not install ${missing.join(' ')}; install them (apt-get install ${missing.join(' ')}) or the tests that need them fail`,
    );
}
