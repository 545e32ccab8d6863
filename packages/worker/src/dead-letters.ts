import { isTerminal } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { DeadLetter, Queue } from '@codefleet/queue';
import { latestRun, type RunStore } from '@codefleet/store';

/** Where the worker finds dead letters nobody reported, and how it reports them. */
export interface DeadLetterReporting {
  /** The run store, to tell a dead letter whose run finished (reported then) from one whose run did not. */
  store: Pick<RunStore, 'get'>;
  /** Reports the unfinished ones (the pipeline's `reportDeadLetters`, loaded only when needed). */
  report(letters: DeadLetter[]): Promise<void>;
}

/** How often a worker looks for dead letters nobody reported. */
export const deadLetterCheckMs = 5 * 60_000;

/**
 * Jobs dead-lettered without their run finishing (a worker died on their last attempt) were
 * reported by nobody: whichever worker looks first reports them. Looks once (a queue
 * listing and a store read per dead letter); a failure is logged, never thrown, so the
 * worker goes on.
 */
export async function reportUnfinishedDeadLetters(
  queue: Pick<Queue, 'deadLetters'>,
  reporting: DeadLetterReporting,
  log: Logger,
): Promise<void> {
  try {
    const dead = await queue.deadLetters({ limit: 100 });
    const unreported = [];
    // A dead letter lists its job only when it verifies (the signed queue): a forged one is never reported.
    for (const letter of dead) {
      if (letter.job === undefined) continue;
      const { run } = await latestRun(reporting.store, letter.job.id);
      if (run === undefined || !isTerminal(run.stage)) unreported.push(letter);
    }
    if (unreported.length > 0) await reporting.report(unreported);
  } catch (err) {
    log.warn({ err, event: 'dead_letter.check_failed' }, 'could not check the dead-letter queue');
  }
}
