/**
 * `npm run bench` (sandbox): what the sandbox costs per agent run, in one run. An agent run
 * is a process start, so the same short command is started again and again:
 * - plain: `runProcess` without the guard, a bare process start (the floor);
 * - none: `sandbox: none`, which is `runProcess` with its Node guard process;
 * - bwrap: bubblewrap (network on, the default), everything a run does: program lookup,
 *   a fresh run directory for HOME and /tmp made and removed, the namespaces;
 * and, to show where the time goes, bwrap with `network: none` (a network namespace too),
 * and the bwrap program alone with the same arguments and a fixed run directory.
 * Set up as a worker would: a writable working copy inside the data directory, the data
 * directory hidden, the run root inside it. Warmed up first, then N rounds, the modes
 * interleaved in a rotating order, so all of them see the same load. The cost is paired per
 * round (bwrap − plain, bwrap − none of the same round), median and p90.
 * Target: bwrap − plain ≤ 50 ms per run (median). Prints; asserts nothing.
 */
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { findExecutable, runProcess, type ProcessResult } from '@codefleet/process';
import { bwrapArgs } from '../bwrap.js';
import { linuxSystemDirs, nodePrefix, systemEntries } from '../host.js';
import { defaultLimits, openSandbox, type Sandbox, type SandboxSettings } from '../index.js';

const rounds = 30;
const warmupRounds = 5;
const targetMs = 50;
const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' };
const host = { platform: process.platform, path: env.PATH ?? '' };

const commands: { label: string; argv: string[] }[] = [
  { label: 'true', argv: ['true'] },
  { label: 'node -e ""', argv: [process.execPath, '-e', ''] },
];

type Mode = 'plain' | 'none' | 'bwrap' | 'bwrap, network none' | 'bwrap program alone';
type Runner = (argv: readonly string[]) => Promise<ProcessResult>;

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  // Nearest rank: p90 of 30 values is the 27th.
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}
const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};
const ms = (value: number) => `${value >= 0 ? '' : '-'}${Math.abs(value).toFixed(1)} ms`;
const row = (cells: string[]) => console.log(cells.map((cell, i) => (i === 0 ? cell.padEnd(34) : cell.padStart(11))).join(' '));

async function timed(run: Runner, argv: readonly string[]): Promise<number> {
  const started = performance.now();
  const result = await run(argv);
  const elapsed = performance.now() - started;
  // A run that did not start or failed measures the wrong thing: say so instead of printing it.
  if (result.exitCode !== 0) throw new Error(`${argv.join(' ')} failed: exit ${String(result.exitCode)} ${result.spawnError ?? ''} ${result.outputTail}`);
  return elapsed;
}

const work = await mkdtemp(join(tmpdir(), 'codefleet-bench-sandbox-'));
try {
  const data = join(work, 'data');
  const copy = join(data, 'copies', 'job-1');
  await mkdir(copy, { recursive: true });
  const settings: SandboxSettings = { mode: 'bwrap', network: { mode: 'public', allow: [] }, limits: defaultLimits, readPaths: [], hiddenPaths: [data], runRoot: join(data, 'sandbox') };
  const runOptions = { cwd: copy, env, writable: [copy], timeoutMs: 60_000 };

  const opened = performance.now();
  const bwrap = await openSandbox(settings, host);
  const openMs = performance.now() - opened;
  const bwrapOffline = await openSandbox({ ...settings, network: { mode: 'none', allow: [] } }, host);
  const none = await openSandbox({ ...settings, mode: 'none' }, host);

  // The bwrap program with the arguments a run gets, but no lookup and no run directory per run.
  const bwrapPath = await findExecutable('bwrap', '/', host.path);
  if (bwrapPath === undefined) throw new Error('bwrap is not on PATH');
  const rawRunDir = await mkdtemp(join(data, 'sandbox', 'raw-'));
  await mkdir(join(rawRunDir, 'home'));
  const realCopy = await realpath(copy);
  const rawArgs = bwrapArgs({
    system: await systemEntries(linuxSystemDirs), readPaths: [await realpath(nodePrefix())], hidden: [{ path: await realpath(data), kind: 'dir' }],
    runDir: rawRunDir, writable: [realCopy], readOnly: [], mounts: [], cwd: realCopy, network: 'public', tmpBytes: 1 << 30, shmBytes: 1 << 26,
  });

  const viaSandbox = (sandbox: Sandbox): Runner => (argv) => sandbox.run(argv, runOptions);
  const runners: [Mode, Runner][] = [
    ['plain', (argv) => runProcess(argv, { cwd: copy, env, timeoutMs: 60_000 })],
    ['none', viaSandbox(none)],
    ['bwrap', viaSandbox(bwrap)],
    ['bwrap, network none', viaSandbox(bwrapOffline)],
    ['bwrap program alone', (argv) => runProcess([bwrapPath, ...rawArgs, '--', ...argv], { cwd: copy, env, timeoutMs: 60_000 })],
  ];

  console.log(`${rounds} rounds after ${warmupRounds} warm-up rounds, modes interleaved; load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}; ${process.platform}, node ${process.version}`);
  console.log(`opening the bwrap sandbox (once per worker, includes its probe run): ${ms(openMs)}`);
  const verdicts: boolean[] = [];
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
    const overPlain = paired('bwrap', 'plain');
    for (const [label, diffs] of [['none − plain (the guard)', paired('none', 'plain')], ['bwrap − none', paired('bwrap', 'none')], ['bwrap − plain', overPlain],
      ['bwrap network none − bwrap', paired('bwrap, network none', 'bwrap')], ['bwrap − bwrap program alone', paired('bwrap', 'bwrap program alone')]] as const) {
      row([`    ${label}`, ms(median(diffs)), ms(quantile(diffs, 0.9))]);
    }
    const met = median(overPlain) <= targetMs;
    verdicts.push(met);
    console.log(`  sandbox cost per run (bwrap − plain, median) ${ms(median(overPlain))}: target <= ${targetMs} ms ${met ? 'PASS' : 'FAIL'}`);
  }
  console.log('');
  console.log(`target <= ${targetMs} ms per run for every command: ${verdicts.every(Boolean) ? 'PASS' : 'FAIL'}`);
} finally {
  await rm(work, { recursive: true, force: true });
}
