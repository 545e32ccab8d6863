import {
  advance,
  cancelOf,
  classify,
  CodefleetError,
  decideOuter,
  endAttempt,
  finish,
  type Classified,
} from '@codefleet/core';
import { maskSecrets } from '@codefleet/log';
import type { JobResult, RunningJob } from './running-job.js';

/**
 * How a delivery that threw ends, in this order: a cancel asked for finishes the run
 * `cancelled`; a lost lease leaves the run to the worker that owns it now; a stop from
 * outside (shutdown) abandons the attempt for a later delivery; anything else is classified
 * (past the job's budget: `budget_exceeded`) and retried or given up ({@link settleFailure}).
 */
export async function settle(running: RunningJob, err: unknown): Promise<JobResult> {
  const { deps, ctx, stopped, tracker, tell, now, budget } = running;
  const { job } = ctx;
  const cancel = cancelOf(err) ?? (stopped.aborted ? cancelOf(stopped.reason) : undefined);
  if (cancel) {
    await tracker.update((r) => finish(r, 'cancelled', { now: now(), note: `cancelled by @${cancel}` }));
    await tell({ kind: 'cancelled', job, run: tracker.run, by: cancel });
    deps.log.info({ event: 'job.cancelled', job_id: job.id, by: cancel }, 'cancelled on request');
    return { action: 'ack', run: tracker.run };
  }
  if ((err as { code?: unknown }).code === 'lease_lost') {
    // Another worker owns the task: its record and its writes win, this one stops here.
    deps.log.warn({ event: 'publish.fenced', job_id: job.id, attempt: ctx.attempt }, (err as Error).message);
    return { action: 'release', run: tracker.run };
  }
  if (stopped.aborted) {
    await tracker.update((r) =>
      endAttempt(advance(r, 'retry_wait', { now: now(), note: 'stopped from outside' }), {
        now: now(),
        outcome: 'abandoned',
      }),
    );
    return { action: 'release', run: tracker.run };
  }
  const error = budget.signal.aborted
    ? classify(
        new CodefleetError(
          'budget_exceeded',
          `the job ran past its wall-clock budget of ${Math.round((budget.ms ?? 0) / 1000)} s (worker.job_budget_seconds)`,
          { verdict: 'permanent' },
        ),
      )
    : classify(err);
  return await settleFailure(running, error);
}

// A failed attempt: retried with backoff while the outer policy allows, else given up and reported.
async function settleFailure(running: RunningJob, error: Classified): Promise<JobResult> {
  const { deps, ctx, tracker, tell, now } = running;
  const mask = (text: string) => maskSecrets(text, deps.settings.secrets);
  const { job } = ctx;
  const decision =
    ctx.attempt >= deps.settings.maxAttempts
      ? {
          action: 'give_up' as const,
          reason: `${error.message} (attempts exhausted: ${ctx.attempt} of ${deps.settings.maxAttempts})`,
        }
      : decideOuter(deps.settings.outer, { attemptsMade: ctx.attempt, error }, deps.random ?? Math.random);
  deps.log.warn(
    {
      event: 'job.attempt_failed',
      job_id: job.id,
      code: error.code,
      verdict: error.verdict,
      attempt: ctx.attempt,
      decision: decision.action,
    },
    error.message,
  );
  if (decision.action === 'retry') {
    await tracker.update((r) =>
      endAttempt(advance(r, 'retry_wait', { now: now() }), { now: now(), outcome: 'retrying', error }),
    );
    return {
      action: 'retry',
      delayMs: decision.delayMs,
      reason: mask(`${error.code}: ${error.message}`),
      run: tracker.run,
    };
  }
  const outcome = error.code === 'no_changes' ? 'no_changes' : error.code === 'dod_failed' ? 'dod_failed' : 'failed';
  await tracker.update((r) => finish(r, outcome, { now: now(), error }));
  await tell({ kind: 'failed', job, run: tracker.run, error, reason: mask(decision.reason) });
  return { action: 'dead_letter', reason: mask(`${error.code}: ${decision.reason}`), run: tracker.run };
}
