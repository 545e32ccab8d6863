import { cancelRequested } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { CancelRequests } from '@codefleet/store';

/** One running job's stop switch: its signal reaches the pipeline and the agent it runs. */
export interface RunningJob {
  readonly signal: AbortSignal;
  /** A lease of the job is lost: stop it, so no one publishes without a lease. */
  lost(err: unknown): void;
  /** Looks once whether a cancel was asked for on the task, and stops the job if so. */
  pollCancel(): void;
  /** The job is over: shutdown no longer needs to stop it. */
  end(): void;
}

/** What stops running jobs: a lost lease, a cancel asked for on the task, shutdown's grace running out. */
export interface Cancellation {
  /** A job starts running under `taskKey`. */
  start(taskKey: string, log: Logger): RunningJob;
  /** The worker is done: forgets the shutdown listener and its grace timer. */
  dispose(): void;
}

/**
 * Watches the worker's shutdown signal: when it aborts, claims stop (the caller's part) and
 * the jobs still running after `graceMs` are stopped, so their leases are released for
 * another worker at once rather than when they expire. Each job also stops on a lost lease
 * or a cancel request found in `cancels` (looked up at each heartbeat, so a cancel stops
 * the agent now rather than at the next stage).
 */
export function watchCancellation(options: {
  shutdown: AbortSignal;
  graceMs: number;
  log: Logger;
  cancels?: Partial<CancelRequests> | undefined;
}): Cancellation {
  const running = new Set<AbortController>();
  let graceTimer: NodeJS.Timeout | undefined;
  const onShutdown = () => {
    options.log.info(
      { event: 'worker.draining', running: running.size, grace_ms: options.graceMs },
      'shutting down: no new claims',
    );
    graceTimer = setTimeout(() => {
      for (const job of running) job.abort(new Error('shutdown grace period over'));
    }, options.graceMs);
  };
  if (options.shutdown.aborted) onShutdown();
  else options.shutdown.addEventListener('abort', onShutdown, { once: true });
  return {
    start: (taskKey, log) => {
      const controller = new AbortController();
      running.add(controller);
      return {
        signal: controller.signal,
        lost: (err) => {
          if (controller.signal.aborted) return;
          log.error({ err, event: 'lease.lost' }, 'lease lost: stopping the job');
          controller.abort(err);
        },
        pollCancel: () => {
          void options.cancels?.cancelRequested?.(taskKey).then(
            (cancel) => {
              if (cancel && !controller.signal.aborted) controller.abort(cancelRequested(cancel.by));
            },
            () => undefined,
          );
        },
        end: () => running.delete(controller),
      };
    },
    dispose: () => {
      clearTimeout(graceTimer);
      options.shutdown.removeEventListener('abort', onShutdown);
    },
  };
}
