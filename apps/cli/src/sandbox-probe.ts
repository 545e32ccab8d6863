import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sandbox } from '@codefleet/sandbox';

/** Whether a program ran in the sandbox, or what went wrong there. */
export type ProbeResult = { ok: true } | { ok: false; problem: string };

/** Long enough for a cold `cargo --version` through rustup on a loaded host; a probe that hangs still ends. */
const probeTimeoutMs = 60_000;

/**
 * Runs `argv` once in `sandbox` as a job's command runs there: the same sandbox, the same
 * environment, a scratch directory as its working copy. Looking a program up on the host
 * is not enough: pyenv's shims and rustup's proxies are found on PATH, then need their
 * homes (~/.pyenv, ~/.rustup), which the sandbox hides with the rest of HOME.
 */
export async function probeInSandbox(
  sandbox: Sandbox,
  argv: readonly string[],
  env: Record<string, string>,
): Promise<ProbeResult> {
  const dir = await mkdtemp(join(tmpdir(), 'codefleet-probe-'));
  try {
    const result = await sandbox.run(argv, { cwd: dir, writable: [dir], env, timeoutMs: probeTimeoutMs });
    const command = argv.join(' ');
    if (result.spawnError !== undefined) return { ok: false, problem: result.spawnError };
    if (result.timedOut) return { ok: false, problem: `${command} did not finish within ${probeTimeoutMs / 1000} s` };
    if (result.exitCode === 0) return { ok: true };
    const how = result.exitCode === null ? `was killed by ${result.signal ?? 'a signal'}` : `exited ${result.exitCode}`;
    const said = result.outputTail.trim().split('\n').at(-1)?.trim();
    return { ok: false, problem: `${command} ${how} there${said ? `: ${said.slice(0, 300)}` : ''}` };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The harmless call that shows a toolchain program starts: its version, or for gofmt, an empty directory formatted. */
export function versionArgv(program: string): string[] {
  if (program === 'go') return [program, 'version'];
  if (program === 'gofmt') return [program, '-l', '.'];
  return [program, '--version'];
}

/** What to do when a program works on the host and not in the sandbox. */
export const sandboxVisibilityFix =
  'install it system-wide (under /usr, /usr/local or /opt), or add its directory and what it needs (e.g. ~/.pyenv, or ~/.cargo and ~/.rustup with RUSTUP_HOME and CARGO_HOME in verification.env.pass) to sandbox.read_paths';
