import { setTimeout as sleep } from 'node:timers/promises';

/** How long a record processor's claim waits for a record. */
const claimWaitMs = 5_000;

/**
 * The loop of a record processor (GitHub deliveries, chat inboxes, kept chat follow-ups):
 * `processNext` until `signal` aborts. A failure (the queue unreachable, a settle that lost
 * its lease) leaves the record where it is: it is reported to `onError`, and the loop goes
 * on after a pause, so one bad moment never stops the producer. `processNext` resolves
 * `undefined` when its claim found nothing.
 */
export async function processUntilAborted(
  signal: AbortSignal,
  processNext: (options: { waitMs: number; signal: AbortSignal }) => Promise<unknown>,
  onError: (error: unknown) => void,
): Promise<void> {
  while (!signal.aborted) {
    const started = Date.now();
    try {
      if ((await processNext({ waitMs: claimWaitMs, signal })) === undefined)
        await paceEmptyClaim(started, claimWaitMs, signal);
    } catch (error) {
      onError(error);
      await sleep(1_000, undefined, { signal }).catch(() => undefined);
    }
  }
}

/**
 * After a claim that came back empty (started at `startedMs`, allowed to wait `waitMs`):
 * waits out the rest of that wait, and at least one turn of the event loop. A queue that
 * cannot wait (one closed under its consumer) answers every claim at once; claimed again at
 * once, a loop runs on resolved promises alone and starves every timer and signal of the
 * process, its own shutdown included. That spun `codefleet serve` at 100% CPU when a port
 * it needed was taken.
 */
export async function paceEmptyClaim(startedMs: number, waitMs: number, signal: AbortSignal): Promise<void> {
  const rest = waitMs - (Date.now() - startedMs);
  await sleep(Math.max(rest, 1), undefined, { signal }).catch(() => undefined);
}
