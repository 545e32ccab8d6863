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
  /** Stops the polling (rejecting) when aborted: a wait another event made moot holds no timer. */
  signal?: AbortSignal;
}

/**
 * The default deadline of a wait for something that must happen: 10 s under the running
 * test's timeout, which the jest preset hands over as a global, so a wait that never ends
 * still fails saying what it waited for, not with a bare test timeout. Outside jest, 110 s.
 * Exported for waits testkit does not run (a browser page's).
 */
export function defaultWaitMs(): number {
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
    if (options.signal?.aborted) {
      const reason: unknown = options.signal.reason;
      const why = reason instanceof Error && reason.name !== 'AbortError' ? `: ${reason.message}` : '';
      throw new Error(`stopped waiting for ${options.what ?? 'condition'}${why}`);
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

/**
 * Runs a scenario that ends at a timeout with each of `timeoutsMs` in turn until `ready` says
 * its precondition held, and returns that run (or the last one, whose assertions then show
 * what was missing) with the timeout it had. A test of what happens at a timeout needs the
 * process to have got somewhere first (printed its pids, set its trap); a loaded machine can
 * hold its start past any short timeout, and asserting on that run would fail a correct
 * program. The timeout under test stays short where the machine allows it.
 */
export async function withTimeoutsUntil<T>(
  timeoutsMs: readonly number[],
  run: (timeoutMs: number) => Promise<T>,
  ready: (result: T) => boolean,
): Promise<{ result: T; timeoutMs: number }> {
  if (timeoutsMs.length === 0) throw new RangeError('withTimeoutsUntil needs at least one timeout');
  let last: { result: T; timeoutMs: number } | undefined;
  for (const timeoutMs of timeoutsMs) {
    last = { result: await run(timeoutMs), timeoutMs };
    if (ready(last.result)) break;
  }
  return last!;
}
