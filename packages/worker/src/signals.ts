import type { Logger } from '@codefleet/log';

/** The exit code of a process stopped by SIGINT (128 + 2), as shells report it. */
const interruptedExitCode = 130;

/**
 * Turns SIGTERM and SIGINT into a graceful shutdown (`shutdown` aborts: no new claims,
 * running jobs drain). Handled with `on`, not `once`: a second SIGTERM while draining (a
 * supervisor that repeats it, a resumed SIGSTOP that delivers what piled up) must not kill
 * the process mid-drain, which would leave its working copies locked and its leases to
 * expire. A second Ctrl-C is a person who will not wait: `exitNow` ends the process with
 * {@link interruptedExitCode} (agents and checks die with it, and the jobs are redelivered
 * when their leases expire). Resolves the function that stops listening.
 */
export function drainOnSignals(shutdown: AbortController, log: Logger, exitNow: (code: number) => void): () => void {
  const stop = (signal: NodeJS.Signals) => {
    if (!shutdown.signal.aborted) {
      shutdown.abort();
      if (signal === 'SIGINT')
        log.warn({ event: 'worker.interrupted' }, 'draining: running jobs may finish; Ctrl-C again to stop now');
    } else if (signal === 'SIGINT') {
      log.warn(
        { event: 'worker.stopped_now', signal },
        'SIGINT again: stopping now; running jobs are redelivered when their leases expire',
      );
      exitNow(interruptedExitCode);
    } else {
      log.warn({ event: 'worker.signal_again', signal }, `${signal} again: still draining`);
    }
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return () => {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
  };
}
