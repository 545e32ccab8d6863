import { advance, isTerminal, newRun, type RunRecord } from '@codefleet/core';
import { latestRun, runIdOf } from '@codefleet/store';
import type { JobContext, PipelineDeps } from './deps.js';
import { finalReportOf } from './final-report.js';
import { fenceFor, type JobResult } from './running-job.js';
import { runReporter } from './undelivered.js';

/** Where a delivery starts: the run to work on and its id, or the verdict on work already finished. */
export type Start = { run: RunRecord; runId: string } | { finished: JobResult };

/**
 * The run this delivery works on: a new one, the one a vanished holder left mid-run (moved to
 * `retry_wait` first), or a new run of a job redriven out of the dead-letter queue. Any other
 * delivery of finished work is a redelivery (the ack was lost): it converges, redoing nothing.
 */
export async function resumeOrRedrive(deps: PipelineDeps, ctx: JobContext): Promise<Start> {
  const now = deps.now ?? (() => new Date());
  const { job } = ctx;
  const latest = await latestRun(deps.store, job.id);
  let existing = latest.run;
  let runId = runIdOf(job.id, latest.generation);
  let origin: { note: string; previous: string } | undefined;
  if (existing && isTerminal(existing.stage)) {
    // A job redriven out of the dead-letter queue starts again at attempt 1 (every queue
    // backend resets the count; conformance-tested): that is a new run of the same job,
    // its failed run kept as it ended (a failed run stays failed).
    if (!(existing.stage === 'failed' && ctx.attempt === 1 && existing.attempts.length > 0)) {
      return { finished: await converge(deps, ctx, existing) };
    }
    origin = {
      note: `redriven from the dead-letter queue; the previous run ${existing.run_id} failed (${existing.error?.code ?? 'failed'})`,
      previous: existing.run_id,
    };
    runId = runIdOf(job.id, latest.generation + 1);
    existing = undefined;
  }
  let run =
    existing ??
    newRun(job, {
      runId,
      now: now(),
      ...(origin === undefined ? {} : { note: origin.note, redrivenFrom: origin.previous }),
    });
  if (run.stage !== 'queued' && run.stage !== 'retry_wait') {
    // The previous holder vanished mid-run (crash, lost lease).
    run = advance(run, 'retry_wait', { now: now(), note: 'previous attempt abandoned' });
  }
  return { run, runId };
}

// A redelivery of finished work: the worker that finished it may have died before its final
// report, so that is sent again; the lease is settled as the run ended.
async function converge(deps: PipelineDeps, ctx: JobContext, existing: RunRecord): Promise<JobResult> {
  const final = finalReportOf(existing);
  if (final) await runReporter(deps, existing.run_id, { before: () => fenceFor(deps, ctx, 'comment') }).tell(final);
  return existing.stage === 'failed'
    ? { action: 'dead_letter', reason: existing.error?.message ?? 'failed', run: existing }
    : { action: 'ack', run: existing };
}
