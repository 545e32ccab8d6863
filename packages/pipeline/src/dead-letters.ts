import { classify, CodefleetError, finish, isTerminal, newRun, type RunRecord } from '@codefleet/core';
import { maskSecrets } from '@codefleet/log';
import type { DeadLetter } from '@codefleet/queue';
import { latestRun } from '@codefleet/store';
import type { PipelineDeps } from './deps.js';
import { runReporter } from './undelivered.js';
import { RunTracker } from './tracker.js';

/**
 * Reports the dead letters nobody reported. A job gets into the dead-letter queue without
 * the pipeline deciding so when its worker died or lost its lease on every attempt (the
 * next claim finds the attempts spent and buries it) or when SQS's redrive policy moved it;
 * its run then stays where the last worker left it, and its issue says `running`. For each
 * of `deadLetters` whose job has no finished run, the run is finished as failed with the
 * queue's reason and reported where the job came from, as the pipeline reports a failure. A job that never started gets a run record. Safe to repeat and to run on several workers: a finished run is
 * left alone, and comments and labels are ensured, not added. Resolves to the ids reported.
 */
export async function reportDeadLetters(deps: PipelineDeps, deadLetters: readonly DeadLetter[]): Promise<string[]> {
  const now = deps.now ?? (() => new Date());
  const reported: string[] = [];
  for (const dead of deadLetters) {
    const job = dead.job;
    if (job === undefined) continue;
    const { run: latest } = await latestRun(deps.store, job.id);
    if (latest !== undefined && isTerminal(latest.stage)) continue;
    const error = classify(
      new CodefleetError('lease_lost', `the job was dead-lettered without finishing: ${dead.reason}`, {
        verdict: 'permanent',
      }),
    );
    const reason = `${error.message} (after ${dead.attempts} attempt(s); its worker stopped or lost the job each time)`;
    const tracker = new RunTracker(
      latest ?? newRun(job, { runId: job.id, now: now() }),
      deps.store,
      deps.log.child({ job_id: job.id }),
      deps.settings.secrets,
    );
    let run: RunRecord;
    try {
      run = await tracker.update((r) =>
        finish(r, 'failed', { now: now(), error, note: 'reported from the dead-letter queue' }),
      );
    } catch (err) {
      deps.log.warn(
        { err, event: 'dead_letter.report_failed', job_id: job.id },
        'could not finish the run of a dead-lettered job',
      );
      continue;
    }
    const report = { kind: 'failed', job, run, error, reason: maskSecrets(reason, deps.settings.secrets) } as const;
    await runReporter(deps, run.run_id).tell(report);
    deps.log.warn(
      { event: 'dead_letter.reported', job_id: job.id, reason: dead.reason },
      'reported a job that was dead-lettered without finishing',
    );
    reported.push(job.id);
  }
  return reported;
}
