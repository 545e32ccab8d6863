import { describe, expect, it } from '@jest/globals';
import { processUntilAborted } from '../src/index.js';

// The loop every record processor runs (GitHub deliveries, chat inboxes and follow-ups).
describe('processUntilAborted', () => {
  it('claims that come back empty at once (a closed queue) are paced: timers, its stop included, still run', async () => {
    const stop = new AbortController();
    setTimeout(() => stop.abort(new Error('stopped by a timer')), 0);
    let claims = 0;
    await processUntilAborted(
      stop.signal,
      async () => {
        claims += 1;
        // Unpaced, the loop runs on resolved promises alone and the timer above never fires.
        if (claims === 1_000) stop.abort(new Error('the loop never yielded to the timer'));
        return undefined;
      },
      () => undefined,
    );
    expect((stop.signal.reason as Error).message).toBe('stopped by a timer');
    expect(claims).toBeLessThan(1_000);
  });

  it('a failed claim is reported and the loop goes on after a pause', async () => {
    const stop = new AbortController();
    const errors: unknown[] = [];
    let claims = 0;
    await processUntilAborted(
      stop.signal,
      async () => {
        claims += 1;
        if (claims === 1) throw new Error('the queue is unreachable');
        stop.abort();
        return { settled: 'acked' };
      },
      (error) => errors.push(error),
    );
    expect(claims).toBe(2);
    expect(errors).toEqual([new Error('the queue is unreachable')]);
  });
});
