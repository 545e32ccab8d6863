import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalQueue } from '@codefleet/queue';
import { gitTestEnv, testFleetKeyEnv } from '@codefleet/testkit';
import { runCli } from '../src/index.js';

/** The built `codefleet` binary, for tests that need a real process. */
export const bin = fileURLToPath(new URL('../dist/bin/codefleet.js', import.meta.url));

/** The local queue of a CLI whose config in `dir` says `data_dir: ./data` (and the default queue name). */
export function openCliQueue(dir: string): LocalQueue {
  return new LocalQueue({
    backend: 'local',
    path: join(dir, 'data', 'queue.sqlite'),
    name: 'codefleet',
    leaseMs: 60_000,
    maxAttempts: 3,
  });
}

/** Runs the CLI in-process against `config.yaml` in `dir`; collects its output. */
export async function cli(dir: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return cliWith(dir, {}, ...argv);
}

/**
 * {@link cli} holding the test fleet key in its environment, as a host of a Redis or SQS fleet
 * must (a local queue makes its own key in the data directory).
 */
export async function fleetCli(dir: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return cliWith(dir, testFleetKeyEnv(), ...argv);
}

async function cliWith(
  dir: string,
  env: Record<string, string>,
  ...argv: string[]
): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(['--config', join(dir, 'config.yaml'), ...argv], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir, ...gitTestEnv(), ...env },
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}
