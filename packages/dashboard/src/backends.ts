import type { DashboardQueue, DashboardStore } from './deps.js';

/** Which backend a failed read or write went to. */
export type Backend = 'queue' | 'store';

const names: Record<Backend, string> = { queue: 'the queue', store: 'the run store' };

/**
 * A queue or store call that failed or did not answer in time. Its message is shown on the
 * page, so it names the backend and the cause, with any credentials of a URL taken out.
 */
export class BackendError extends Error {
  constructor(
    readonly backend: Backend,
    cause: unknown,
  ) {
    // Our own time-out says all there is; a logger would only print it twice as the cause.
    super(`${names[backend]} cannot be reached: ${reasonOf(cause)}`, cause instanceof NoAnswer ? {} : { cause });
    this.name = 'BackendError';
  }
}

/** A call that did not answer in time. */
class NoAnswer extends Error {}

/** A cause as one short line: its code and message, `user:password@` of URLs removed. */
function reasonOf(cause: unknown): string {
  const message = cause instanceof Error ? cause.message : String(cause);
  const code = (cause as { code?: unknown } | undefined)?.code;
  const text = typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
  return text
    .replace(/\/\/[^/@\s]*@/g, '//')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300);
}

/**
 * The backends with every call bounded by `timeoutMs` and its failure made a
 * {@link BackendError}. A worker's Redis connection waits through an outage instead of
 * failing; without a bound a page would hang as long as Redis is down. A write that times
 * out may still land later; its error says so.
 */
export function guardBackends(
  queue: DashboardQueue,
  store: DashboardStore,
  timeoutMs: number,
): { queue: DashboardQueue; store: DashboardStore } {
  return { queue: guard(queue, 'queue', timeoutMs), store: guard(store, 'store', timeoutMs) };
}

function guard<T extends object>(target: T, backend: Backend, timeoutMs: number): T {
  return new Proxy(target, {
    get(object, key, receiver) {
      const value: unknown = Reflect.get(object, key, receiver);
      if (typeof value !== 'function') return value;
      const write = writes.has(String(key));
      return (...args: unknown[]) =>
        bounded(backend, timeoutMs, write, () => (value as (...a: unknown[]) => Promise<unknown>).apply(object, args));
    },
  });
}

/** The calls that change something: one that times out may still land. */
const writes = new Set([
  'enqueue',
  'redrive',
  'drop',
  'cancelPending',
  'save',
  'requestCancel',
  'clearCancel',
  'record',
  'bindRequest',
  'setRequest',
  'releaseRequest',
]);

async function bounded<R>(backend: Backend, timeoutMs: number, write: boolean, call: () => Promise<R>): Promise<R> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    const note = write ? ' (the action may still take effect)' : '';
    timer = setTimeout(() => reject(new NoAnswer(`no answer within ${timeoutMs / 1000} s${note}`)), timeoutMs);
  });
  try {
    return await Promise.race([call(), late]);
  } catch (error) {
    // A record the store reached but cannot read is that record's problem, not an outage.
    if (error instanceof BackendError || isUnreadableRecord(error)) throw error;
    throw new BackendError(backend, error);
  } finally {
    clearTimeout(timer);
  }
}

/** A run record the store holds but cannot read (`invalid_run`): shown as such, never as the store being down. */
export function isUnreadableRecord(error: unknown): error is Error & { code: 'invalid_run' } {
  return error instanceof Error && (error as { code?: unknown }).code === 'invalid_run';
}
