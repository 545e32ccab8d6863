import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The loop of a record processor (GitHub deliveries, kept chat follow-ups): `processNext`
 * until `signal` aborts. A failure (the queue unreachable, a settle that lost its lease)
 * leaves the record where it is: it is reported to `onError`, and the loop goes on after a
 * pause, so one bad moment never stops the producer.
 */
export async function processUntilAborted(
  signal: AbortSignal,
  processNext: (options: { waitMs: number; signal: AbortSignal }) => Promise<unknown>,
  onError: (error: unknown) => void,
): Promise<void> {
  while (!signal.aborted) {
    try {
      await processNext({ waitMs: 5_000, signal });
    } catch (error) {
      onError(error);
      await sleep(1_000, undefined, { signal }).catch(() => undefined);
    }
  }
}
