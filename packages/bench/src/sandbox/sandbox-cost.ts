/**
 * `npm run bench` (sandbox), part one: what the sandbox costs per agent run. An agent run is a
 * process start, so the same short command is started again and again in five modes:
 * - plain: `runProcess` without the guard, a bare process start (the floor);
 * - none: `sandbox: none`, which is `runProcess` with its Node guard process;
 * - bwrap public: everything a run with the network does: program lookup, a run directory
 *   made and removed, the namespaces (a network namespace always), a cgroup where this user
 *   may make one, the run's proxy on a unix socket, and the warden (this Node, started inside
 *   as the run's first program: it relays to the proxy, watches the limits, runs the program
 *   under prlimit);
 * - bwrap network none: the same without the proxy and the relay (the warden still runs);
 * - bwrap program alone: bwrap with the arguments of a run, started directly on the program:
 *   no warden, no prlimit, no cgroup, no lookup, no run directory per run.
 * Set up as a worker would: a writable working copy inside the data directory, the data
 * directory hidden, the run root inside it. Warmed up first, then N rounds, the modes
 * interleaved in a rotating order, so all of them see the same load; costs are paired per
 * round (the difference of two modes in the same round), median and p90.
 * Target: the network policy (bwrap public − bwrap network none) ≤ 50 ms per run, median.
 * Prints; asserts nothing.
 */
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { captureProcess, findExecutable, runProcess, type ProcessResult } from '@codefleet/process';
import {
  bwrapArgs,
  defaultLimits,
  etcLinkTargets,
  existingRealPaths,
  linuxSystemDirs,
  nodePrefix,
  openSandbox,
  sandboxHome,
  systemEntries,
  type Sandbox,
  type SandboxSettings,
} from '@codefleet/sandbox';
import { loadLine, median, ms, quantile, row } from './stats.js';

const rounds = 20;
const warmupRounds = 3;
const targetMs = 50;
const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' };
const host = { platform: process.platform, path: env.PATH ?? '' };

const commands: { label: string; argv: string[] }[] = [
  { label: 'true', argv: ['true'] },
  { label: 'node -e ""', argv: [process.execPath, '-e', ''] },
];

type Mode = 'plain' | 'none' | 'bwrap public' | 'bwrap network none' | 'bwrap program alone';
type Runner = (argv: readonly string[]) => Promise<ProcessResult>;

/** The paired costs printed per command: label, the mode paid for, the mode it is measured over. */
const costs: readonly [string, Mode, Mode][] = [
  ['network policy: bwrap public − bwrap network none', 'bwrap public', 'bwrap network none'],
  ['warden + run set-up: network none − program alone', 'bwrap network none', 'bwrap program alone'],
  ['whole sandbox: bwrap public − none', 'bwrap public', 'none'],
  ['old headline: bwrap public − plain', 'bwrap public', 'plain'],
  ['the guard: none − plain', 'none', 'plain'],
];

async function timed(run: Runner, argv: readonly string[]): Promise<number> {
  const started = performance.now();
  const result = await run(argv);
  const elapsed = performance.now() - started;
  // A run that did not start or failed measures the wrong thing: say so instead of printing it.
  if (result.exitCode !== 0)
    throw new Error(
      `${argv.join(' ')} failed: exit ${String(result.exitCode)} ${result.spawnError ?? ''} ${result.outputTail}`,
    );
  return elapsed;
}

const work = await mkdtemp(join(tmpdir(), 'codefleet-bench-sandbox-'));
try {
  const data = join(work, 'data');
  const copy = join(data, 'copies', 'job-1');
  await mkdir(copy, { recursive: true });
  const settings: SandboxSettings = {
    mode: 'bwrap',
    network: { mode: 'public', allow: [] },
    limits: defaultLimits,
    readPaths: [],
    hiddenPaths: [data],
    runRoot: join(data, 'sandbox'),
  };
  const runOptions = { cwd: copy, env, writable: [copy], timeoutMs: 60_000 };

  const opened = performance.now();
  const bwrap = await openSandbox(settings, host);
  const openMs = performance.now() - opened;
  const bwrapOffline = await openSandbox({ ...settings, network: { mode: 'none', allow: [] } }, host);
  const none = await openSandbox({ ...settings, mode: 'none' }, host);

  // The bubblewrap arguments of a run, built as openSandbox builds them, without a warden:
  // bwrap then starts the program itself, which shows what the warden adds.
  const bwrapPath = await findExecutable('bwrap', '/', host.path);
  if (bwrapPath === undefined) throw new Error('bwrap is not on PATH');
  const help = await captureProcess([bwrapPath, '--help'], { cwd: '/', env: { PATH: host.path } });
  const realCopy = await realpath(copy);
  const rawArgs = bwrapArgs({
    system: await systemEntries(linuxSystemDirs),
    readPaths: await existingRealPaths([nodePrefix(), ...(await etcLinkTargets())]),
    hidden: [{ path: await realpath(data), kind: 'dir' }],
    runDir: join(await realpath(data), 'sandbox', 'unused'),
    writable: [realCopy],
    readOnly: [],
    mounts: [],
    cwd: realCopy,
    network: 'none',
    disableUserns: `${help.stdout}${help.stderr}`.includes('--disable-userns'),
    tmpBytes: defaultLimits.tmpMb * 1024 * 1024,
    shmBytes: defaultLimits.shmMb * 1024 * 1024,
  });
  const rawEnv = { ...env, HOME: sandboxHome, TMPDIR: '/tmp' };

  const viaSandbox =
    (sandbox: Sandbox): Runner =>
    (argv) =>
      sandbox.run(argv, runOptions);
  const runners: [Mode, Runner][] = [
    ['plain', (argv) => runProcess(argv, { cwd: copy, env, timeoutMs: 60_000 })],
    ['none', viaSandbox(none)],
    ['bwrap public', viaSandbox(bwrap)],
    ['bwrap network none', viaSandbox(bwrapOffline)],
    [
      'bwrap program alone',
      (argv) => runProcess([bwrapPath, ...rawArgs, '--', ...argv], { cwd: copy, env: rawEnv, timeoutMs: 60_000 }),
    ],
  ];

  console.log('sandbox cost per run');
  console.log(
    `${rounds} rounds after ${warmupRounds} warm-up rounds, modes interleaved; ${loadLine(loadavg())}; ${process.platform}, node ${process.version}`,
  );
  console.log(bwrap.description);
  console.log(`opening the bwrap sandbox (once per worker, includes its probe run): ${ms(openMs)}`);
  const networkCosts: number[] = [];
  const overNone: number[] = [];
  const overPlain: number[] = [];
  const wardenCosts: number[] = [];
  for (const command of commands) {
    const times = new Map<Mode, number[]>(runners.map(([mode]) => [mode, []]));
    for (let round = 0; round < warmupRounds + rounds; round += 1) {
      // Rotate the order, so no mode always runs right after the same other one.
      for (let i = 0; i < runners.length; i += 1) {
        const [mode, run] = runners[(round + i) % runners.length]!;
        const elapsed = await timed(run, command.argv);
        if (round >= warmupRounds) times.get(mode)!.push(elapsed);
      }
    }
    const of = (mode: Mode) => times.get(mode)!;
    const paired = (a: Mode, b: Mode) => of(a).map((t, i) => t - (of(b)[i] ?? Number.NaN));
    console.log('');
    row([`command: ${command.label}`, 'median', 'p90']);
    for (const [mode] of runners) row([`  ${mode}`, ms(median(of(mode))), ms(quantile(of(mode), 0.9))]);
    row(['  cost, paired per round:', '', '']);
    for (const [label, a, b] of costs) {
      const diffs = paired(a, b);
      row([`    ${label}`, ms(median(diffs)), ms(quantile(diffs, 0.9))]);
    }
    networkCosts.push(median(paired('bwrap public', 'bwrap network none')));
    wardenCosts.push(median(paired('bwrap network none', 'bwrap program alone')));
    overNone.push(median(paired('bwrap public', 'none')));
    overPlain.push(median(paired('bwrap public', 'plain')));
  }
  const worst = (values: readonly number[]) => Math.max(...values);
  const verdict = (value: number) => (value <= targetMs ? 'PASS' : 'FAIL');
  console.log('');
  console.log(
    `network policy per run (bwrap public − bwrap network none: the run's proxy on its socket and the warden's relay), worst command's median ${ms(worst(networkCosts))}: target <= ${targetMs} ms ${verdict(worst(networkCosts))}`,
  );
  console.log(
    `whole sandbox per run over sandbox none (bwrap public − none: namespaces, run directory, cgroup, prlimit, proxy and the warden's Node start), worst command's median ${ms(worst(overNone))}`,
  );
  console.log(
    `  the warden and run set-up cost ${ms(worst(wardenCosts))} over bare bwrap (network none − program alone); over none part of it cancels out, as none starts a Node guard too`,
  );
  console.log(
    `  over plain (the old headline, whose target was set before every run started a warden): ${ms(worst(overPlain))}: old target <= ${targetMs} ms ${verdict(worst(overPlain))}`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
