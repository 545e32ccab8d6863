#!/usr/bin/env node
// `npm test`: builds what the tests need, runs every workspace's jest suite through turbo,
// then prints the ten slowest test files and one summary line `N passed, N failed` from the
// jest JSON reports. A suite that could not run (a compile error, a crash) counts as a
// failure, so nothing fails silently.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const workspaces = ['packages', 'apps']
  .flatMap((group) => {
    const dir = join(root, group);
    return existsSync(dir) ? readdirSync(dir).map((name) => join(dir, name)) : [];
  })
  .filter((dir) => {
    const manifest = join(dir, 'package.json');
    return existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).scripts?.test;
  });

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

const turbo = spawnSync(
  'npx',
  ['turbo', 'run', 'test', '--continue', '--log-order=grouped', ...process.argv.slice(2)],
  {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1' },
  },
);

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
if (turbo.status !== 0 && failed === 0) {
  failed += 1;
  problems.push(`turbo exited with ${turbo.status ?? turbo.signal}: a build or test task failed`);
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
