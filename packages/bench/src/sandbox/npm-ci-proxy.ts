/**
 * `npm run bench` (sandbox), part two: what the network policy costs a real install. A
 * mid-sized package set (eslint@9, about 90 packages) is locked now against the npm registry
 * (no third-party code is kept in the repository), then installed with `npm ci` again and
 * again, each time into an empty npm cache, so every tarball is really downloaded:
 * (a) in the bwrap sandbox with `network: public`, every request going through the run's
 *     proxy (the warden's relay in the run, the unix socket, the worker's proxy);
 * (b) on the host without a sandbox, as a plain child process with the same environment.
 *     There is no bwrap run without a network namespace any more, so this is the baseline.
 * One warm-up round (DNS, the registry's edge), then N rounds alternating which goes first.
 * The registry's throughput is noisy: medians, and the ratio of the medians.
 * Target: a / b ≤ 1.2. Prints; asserts nothing.
 */
import { access, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { captureProcess, findExecutable, runProcess, type ProcessResult } from '@codefleet/process';
import { defaultLimits, openSandbox, type SandboxSettings } from '@codefleet/sandbox';
import { loadLine, median, ms } from './stats.js';

const spec = 'eslint@9';
const rounds = 5;
const targetRatio = 1.2;
const timeoutMs = 10 * 60_000;
const npmFlags = ['--no-audit', '--no-fund', '--ignore-scripts'];
const path = process.env.PATH ?? '/usr/bin:/bin';

type Mode = 'sandbox' | 'host';
const labels: Record<Mode, string> = {
  sandbox: '(a) bwrap sandbox, network public (through the proxy)',
  host: '(b) host, no sandbox (plain child process)',
};

// npm's own script, started with this Node: no shebang lookup on PATH, inside or out.
async function findNpm(): Promise<string> {
  const beside = join(dirname(process.execPath), 'npm');
  const found = await access(beside).then(
    () => beside,
    async () => findExecutable('npm', '/', path),
  );
  if (found === undefined) throw new Error(`npm is neither beside ${process.execPath} nor on PATH`);
  return realpath(found);
}

async function bytesIn(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) total += await bytesIn(full);
    else if (entry.isFile()) total += (await stat(full)).size;
  }
  return total;
}

function failed(what: string, result: ProcessResult): Error {
  return new Error(
    `${what} failed: exit ${String(result.exitCode)} ${result.signal ?? ''} ${result.spawnError ?? ''}\n${result.outputTail}`,
  );
}

const work = await mkdtemp(join(tmpdir(), 'codefleet-bench-npm-ci-'));
try {
  // Laid out as a worker's: the project is a working copy inside the hidden data directory.
  const data = join(work, 'data');
  const project = join(data, 'copies', 'job-1');
  const scratch = join(data, 'scratch');
  await mkdir(project, { recursive: true });
  await mkdir(scratch);
  const settings: SandboxSettings = {
    mode: 'bwrap',
    network: { mode: 'public', allow: [] },
    limits: defaultLimits,
    readPaths: [],
    hiddenPaths: [data],
    runRoot: join(data, 'sandbox'),
  };
  const sandbox = await openSandbox(settings, { platform: process.platform, path });
  const npm = await findNpm();

  // Both runs get this environment, with a fresh cache and HOME each (the sandbox puts its own
  // HOME in the run's /tmp, and adds the proxy's variables).
  const freshEnv = async () => {
    const cache = await mkdtemp(join(scratch, 'cache-'));
    const home = await mkdtemp(join(scratch, 'home-'));
    return {
      cache,
      home,
      env: { PATH: path, LANG: 'C', HOME: home, npm_config_cache: cache, npm_config_update_notifier: 'false' },
    };
  };

  await writeFile(
    join(project, 'package.json'),
    `${JSON.stringify({ name: 'codefleet-bench-install', version: '0.0.0', private: true }, null, 2)}\n`,
  );
  const locking = await freshEnv();
  const locked = await runProcess([process.execPath, npm, 'install', '--package-lock-only', ...npmFlags, spec], {
    cwd: project,
    env: locking.env,
    timeoutMs,
  });
  if (locked.exitCode !== 0) throw failed(`npm install --package-lock-only ${spec}`, locked);
  const lock = JSON.parse(await readFile(join(project, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, unknown>;
  };
  const packages = Object.keys(lock.packages).filter((key) => key !== '').length;
  const version = (
    await captureProcess([process.execPath, npm, '--version'], { cwd: project, env: locking.env })
  ).stdout.trim();

  let downloaded = 0;
  const install = async (mode: Mode): Promise<number> => {
    await rm(join(project, 'node_modules'), { recursive: true, force: true });
    const { cache, home, env } = await freshEnv();
    const argv = [process.execPath, npm, 'ci', ...npmFlags];
    const started = performance.now();
    const result =
      mode === 'sandbox'
        ? await sandbox.run(argv, { cwd: project, env, writable: [project, cache], timeoutMs })
        : await runProcess(argv, { cwd: project, env, timeoutMs });
    const elapsed = performance.now() - started;
    if (result.exitCode !== 0) throw failed(`npm ci (${labels[mode]})`, result);
    if (result.networkRefusals !== undefined)
      throw new Error(`npm ci in the sandbox was refused ${JSON.stringify(result.networkRefusals)}`);
    const installed = JSON.parse(await readFile(join(project, 'node_modules', '.package-lock.json'), 'utf8')) as {
      packages: Record<string, unknown>;
    };
    if (Object.keys(installed.packages).length < packages)
      throw new Error(
        `npm ci (${labels[mode]}) installed ${Object.keys(installed.packages).length} of ${packages} packages`,
      );
    downloaded = await bytesIn(cache);
    await rm(cache, { recursive: true, force: true });
    await rm(home, { recursive: true, force: true });
    return elapsed;
  };

  console.log('');
  console.log('npm ci through the sandbox proxy');
  console.log(
    `${spec}: ${packages} packages, locked now; npm ${version} ci ${npmFlags.join(' ')}, an empty npm cache each run`,
  );
  console.log(`${rounds} rounds after 1 warm-up round, the order alternating; ${loadLine(loadavg())}`);
  console.log(
    `${labels.host}: there is no bwrap without a network namespace any more, so the baseline is npm ci on the host, same environment`,
  );
  const warmup = { sandbox: await install('sandbox'), host: await install('host') };
  console.log(
    `warm-up: (a) ${ms(warmup.sandbox)}, (b) ${ms(warmup.host)}; ${(downloaded / 1024 / 1024).toFixed(1)} MiB downloaded into the cache per run`,
  );
  const times: Record<Mode, number[]> = { sandbox: [], host: [] };
  for (let round = 0; round < rounds; round += 1) {
    const order: Mode[] = round % 2 === 0 ? ['host', 'sandbox'] : ['sandbox', 'host'];
    for (const mode of order) times[mode].push(await install(mode));
  }
  const pad = (text: string) => text.padStart(11);
  console.log(`${''.padEnd(56)}${pad('median')}${pad('min')}${pad('max')}`);
  for (const mode of ['sandbox', 'host'] as const) {
    const values = times[mode];
    console.log(
      `${labels[mode].padEnd(56)}${pad(ms(median(values)))}${pad(ms(Math.min(...values)))}${pad(ms(Math.max(...values)))}`,
    );
  }
  const perRound = times.sandbox.map((a, i) => a / (times.host[i] ?? Number.NaN));
  console.log(`a / b per round: ${perRound.map((ratio) => `${ratio.toFixed(2)}×`).join(' ')}`);
  const ratio = median(times.sandbox) / median(times.host);
  console.log(
    `npm ci through the proxy, a / b (medians): ${ratio.toFixed(2)}×: target <= ${targetRatio}× ${ratio <= targetRatio ? 'PASS' : 'FAIL'}; ${loadLine(loadavg())}`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
