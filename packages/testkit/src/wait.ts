import { setTimeout as sleep } from 'node:timers/promises';

/** Options for {@link waitFor}. */
export interface WaitOptions {
  /**
   * When to give up (default {@link defaultWaitMs}). A wait for something that must happen
   * leaves it unset: a shorter deadline fails a correct but slow run on a loaded machine.
   */
  timeoutMs?: number;
  intervalMs?: number;
  /** Says what was awaited, for the timeout error. */
  what?: string;
}

/**
 * The default deadline: 10 s under the running test's timeout, which the jest preset hands
 * over as a global, so a wait that never ends still fails saying what it waited for, not with
 * a bare test timeout. Outside jest, 110 s.
 */
function defaultWaitMs(): number {
  const testTimeoutMs = (globalThis as { __codefleetTestTimeoutMs?: unknown }).__codefleetTestTimeoutMs;
  return typeof testTimeoutMs === 'number' && testTimeoutMs > 20_000 ? testTimeoutMs - 10_000 : 110_000;
}

/**
 * Polls `check` until it returns a value other than `undefined`/`false`, and resolves to it.
 * Tests use it instead of fixed sleeps so they are as fast as the system allows.
 */
export async function waitFor<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  options: WaitOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? defaultWaitMs();
  const intervalMs = options.intervalMs ?? 25;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const suffix = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${options.what ?? 'condition'}${suffix}`);
    }
    await sleep(intervalMs);
  }
}

/** True while a process with this pid exists (signal 0 probes without delivering anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
