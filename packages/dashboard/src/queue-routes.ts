import { latestRun } from '@codefleet/store';
import type { PendingJob } from '@codefleet/queue';
import { act } from './action-routes.js';
import type { DashboardDeps } from './deps.js';
import { html } from './html.js';
import { confirmBody } from './pages/confirm.js';
import { queuedBody, queuedJobBody } from './pages/queued.js';
import { cancelQueuedJob } from './queued-actions.js';
import { formTokenOf, HttpError, idParams, type RouteContext } from './route-context.js';

/** Waiting jobs listed on the queue page, longest-waiting first. */
const listed = 200;
/** Waiting jobs looked through for one job's page. */
const jobScan = 1000;

/** The waiting job `id`, among the first {@link jobScan} waiting. */
async function waitingJob(deps: DashboardDeps, id: string): Promise<PendingJob | undefined> {
  return (await deps.queue.pending({ limit: jobScan })).find((job) => job.id === id);
}

/**
 * The queue's waiting jobs (`queue.pending`): the list with the limit holding each, a job's
 * page, and cancelling one before any worker claims it (with a reason, confirmed on a page
 * of its own, as a run's cancel). A job no longer waiting leads to its run.
 */
export function addQueueRoutes(ctx: RouteContext): void {
  const { app, deps, sendPage } = ctx;
  app.get('/queue', async (_req, reply) => {
    const [jobs, stats] = await Promise.all([deps.queue.pending({ limit: listed }), deps.queue.stats()]);
    const total = Math.max(stats.depth, jobs.length);
    return sendPage(reply, 'Queued jobs', queuedBody(jobs, total, deps.now().getTime(), deps.readOnly));
  });
  app.get<{ Params: { id: string } }>('/queue/:id', { schema: { params: idParams } }, async (req, reply) => {
    const job = await waitingJob(deps, req.params.id);
    if (job !== undefined)
      return sendPage(reply, job.title ?? `Job ${job.id}`, queuedJobBody(job, deps.now().getTime(), deps.readOnly));
    const { run } = await latestRun(deps.store, req.params.id);
    if (run !== undefined) return reply.redirect(`/runs/${encodeURIComponent(run.run_id)}`, 303);
    return sendPage(
      reply,
      'No such job',
      html`<p>No job ${req.params.id} is waiting in the queue.</p>`,
      undefined,
      404,
    );
  });
  app.get<{ Params: { id: string } }>('/queue/:id/cancel', { schema: { params: idParams } }, async (req, reply) => {
    if (deps.readOnly) throw new HttpError(403, 'the dashboard is read-only');
    const id = req.params.id;
    const job = await waitingJob(deps, id);
    if (job === undefined)
      return sendPage(
        reply,
        'Not waiting',
        html`<p>No job ${id} is waiting in the queue. <a href="/queue">Back</a></p>`,
        undefined,
        404,
      );
    const body = confirmBody({
      action: `/queue/${encodeURIComponent(id)}/cancel`,
      label: 'Cancel the job',
      target: html`<p><strong>${job.title ?? id}</strong> · ${job.repo} · <span class="state state-queued">queued</span></p>`,
      consequence:
        'It leaves the queue before any worker claims it, recorded as a cancelled run; it can be retried from that run.',
      back: `/queue/${encodeURIComponent(id)}`,
      csrf: formTokenOf(ctx, req),
    });
    return sendPage(reply, `Cancel queued job ${id}?`, body);
  });
  app.post(
    '/queue/:id/cancel',
    { schema: { params: idParams } },
    act(
      ctx,
      (actionDeps, id, body) =>
        cancelQueuedJob(actionDeps, id, typeof body.reason === 'string' ? body.reason : undefined),
      (result) => (result.runId === undefined ? '/queue' : `/runs/${encodeURIComponent(result.runId)}`),
    ),
  );
}
