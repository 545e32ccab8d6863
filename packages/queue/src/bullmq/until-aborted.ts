/**
 * `promise`'s value, or undefined as soon as `signal` aborts; a value that arrives after
 * the abort goes to `late` (never lost silently, never an unhandled rejection).
 */
export function untilAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  late: (value: T) => void,
): Promise<T | undefined> {
  if (signal === undefined) return promise;
  return new Promise<T | undefined>((resolve, reject) => {
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      resolve(undefined);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (aborted) late(value);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (!aborted) reject(error);
      },
    );
  });
}
