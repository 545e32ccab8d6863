import type { JobContext, PipelineDeps } from './deps.js';
import { answerJob } from './answer.js';
import { runChain } from './escalation.js';
import { finishUnpublished, gradedOnly, gradeJob } from './grade.js';
import { runPasses } from './passes.js';
import { planJob } from './plan.js';
import { prepareJob } from './prepare.js';
import { publishJob } from './publish.js';
import { resumeOrRedrive } from './resume.js';
import { startRun, type JobResult } from './running-job.js';
import { settle } from './settle.js';
import { validateJob } from './validate.js';

export type { JobResult } from './running-job.js';

/**
 * Runs one delivery of a job: claim → prepare → plan → implement → test → validate →
 * publish, each stage in its own file and entered on its first line. Every step lands in
 * the run record. Redelivery converges: a job whose run is already done is acknowledged,
 * the branch name never depends on the attempt, and forge writes are `ensure*`.
 */
export async function runJob(deps: PipelineDeps, ctx: JobContext): Promise<JobResult> {
  const start = await resumeOrRedrive(deps, ctx);
  if ('finished' in start) return start.finished;
  const running = await startRun(deps, ctx, start);
  let failed = false;
  try {
    const prepared = await prepareJob(running);
    if (ctx.job.mode === 'answer') return await answerJob(running, prepared);
    const input = await planJob(running, prepared);
    const { chain, agents } = prepared;
    const passed =
      chain === undefined ? await runPasses(input, running.enter) : await runChain(input, chain, agents, running.enter);
    const validated = await validateJob(running, input, passed);
    // After the agent's last attempt: nothing it runs can see the hidden tests.
    await gradeJob(running, input, validated);
    if (gradedOnly(ctx.job)) return await finishUnpublished(running, prepared, validated);
    return await publishJob(running, prepared, validated);
  } catch (err) {
    failed = true;
    return await settle(running, err);
  } finally {
    await running.end(failed);
  }
}
