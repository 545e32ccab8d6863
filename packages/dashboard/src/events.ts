import type { ServerResponse } from 'node:http';
import { BackendError } from './backends.js';
import type { View } from './views.js';

/** One server-sent event; every line of `data` gets its own `data:` field, as the format requires. */
function sseEvent(event: string, data: string): string {
  return `event: ${event}\n${data
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}`)
    .join('\n')}\n\n`;
}

/** Options of {@link streamView}. */
export interface StreamOptions {
  /** How often the view is read again. */
  pollMs: number;
  /** A comment is sent after this long without an event, so proxies keep the stream open. */
  keepAliveMs: number;
  /** Told about the first failed read of a run of failures (the stream goes on). */
  onError?: (error: unknown) => void;
}

/**
 * Sends `update` with the view's markup whenever its data changed, reading it every
 * `pollMs` (the store has no change feed on every backend; a read of the overview is a
 * handful of queries). Resolves a stop function; the stream also stops when the client goes.
 */
export function streamView(
  res: ServerResponse,
  read: () => Promise<View | undefined>,
  options: StreamOptions,
): () => void {
  let last: string | undefined;
  let quietSince = Date.now();
  let stopped = false;
  let failing = false;
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    res.end();
  };
  const tick = async () => {
    try {
      const view = await read();
      failing = false;
      if (stopped) return;
      if (view === undefined) {
        res.write(sseEvent('gone', ''));
        stop();
        return;
      }
      if (view.fingerprint !== last) {
        last = view.fingerprint;
        quietSince = Date.now();
        res.write(sseEvent('update', view.body.text));
      } else if (Date.now() - quietSince >= options.keepAliveMs) {
        quietSince = Date.now();
        res.write(': keep-alive\n\n');
      }
    } catch (error) {
      // Once per outage: every open page reads every pollMs, and the log is read by people.
      if (!failing) options.onError?.(error);
      failing = true;
      if (stopped) return;
      // Plain text: the page shows it as text in its problem banner until the next update,
      // which the next good read sends even when the data did not change meanwhile.
      res.write(
        sseEvent(
          'problem',
          error instanceof BackendError
            ? error.message
            : "reading the page failed; the dashboard's log has the details",
        ),
      );
      last = undefined;
    }
    if (!stopped) timer = setTimeout(() => void tick(), options.pollMs);
  };
  res.on('close', stop);
  // Back to a quick reconnect, in case an earlier answer (a refusal) asked this page for a slow one.
  res.write(`retry: ${reconnectMs}\n\n`);
  void tick();
  return stop;
}

/** How soon a page reconnects after an interruption (what browsers do unasked). */
const reconnectMs = 3000;

/**
 * Answers a stream that may not open now: a `refused` event, which the page shows as a
 * banner (a non-200 answer would only close its EventSource silently), and a reconnect
 * in `retryMs`, when a stream may have closed.
 */
export function refuseStream(res: ServerResponse, message: string, retryMs: number): void {
  res.end(`retry: ${retryMs}\n${sseEvent('refused', message)}`);
}
