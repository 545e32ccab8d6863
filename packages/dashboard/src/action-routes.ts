import type { FastifyReply, FastifyRequest } from 'fastify';
import { isTerminal } from '@codefleet/core';
import { cancelRun, dropDeadLetter, redriveDeadLetter, retryRun, type ActionResult } from './actions.js';
import type { ActionDeps } from './deps.js';
import { html } from './html.js';
import { confirmBody } from './pages/confirm.js';
import { formTokenOf, HttpError, idParams, type RouteContext } from './route-context.js';

/** How many dead letters are scanned for the one to drop. */
const deadLetterScan = 1000;

/**
 * The cancel / retry / redrive / drop actions (refused when read-only), each recorded in the
 * run store's journal under the operator who took it. Cancel and drop cannot be undone: a
 * GET of their path is a page that asks for a reason and a confirmation, and the POST
 * refuses to act without a reason. A form post is answered with a redirect back or a page
 * saying why not; a JSON post with `{ ok, message, runId? }`.
 */
export function addActionRoutes(ctx: RouteContext): void {
  const { app } = ctx;
  const runPage = (result: ActionResult, id: string) => `/runs/${encodeURIComponent(result.runId ?? id)}`;
  const reasonOf = (body: Record<string, unknown>) => (typeof body.reason === 'string' ? body.reason : undefined);
  addConfirmPages(ctx);
  app.post(
    '/runs/:id/cancel',
    { schema: { params: idParams } },
    act(ctx, (deps, id, body) => cancelRun(deps, id, reasonOf(body)), runPage),
  );
  app.post(
    '/runs/:id/retry',
    { schema: { params: idParams } },
    act(ctx, (deps, id) => retryRun(deps, id), runPage),
  );
  app.post(
    '/dead-letters/:id/redrive',
    { schema: { params: idParams } },
    act(
      ctx,
      (deps, id, body) => redriveDeadLetter(deps, id, reasonOf(body)),
      (result) => (result.runId === undefined ? '/dead-letters' : `/runs/${encodeURIComponent(result.runId)}`),
    ),
  );
  app.post(
    '/dead-letters/:id/drop',
    { schema: { params: idParams } },
    act(
      ctx,
      (deps, id, body) => dropDeadLetter(deps, id, reasonOf(body)),
      () => '/dead-letters',
    ),
  );
}

/** The confirmation pages of cancel and drop: what is about to go, and a reason to give. */
function addConfirmPages(ctx: RouteContext): void {
  const { app, deps, sendPage } = ctx;
  app.get<{ Params: { id: string } }>('/runs/:id/cancel', { schema: { params: idParams } }, async (req, reply) => {
    if (deps.readOnly) throw new HttpError(403, 'the dashboard is read-only');
    const id = req.params.id;
    const back = `/runs/${encodeURIComponent(id)}`;
    const run = await deps.store.get(id);
    if (run === undefined) return sendPage(reply, 'No such run', html`<p>No run ${id}.</p>`, undefined, 404);
    if (isTerminal(run.stage))
      return sendPage(
        reply,
        'Nothing to cancel',
        html`<p>Run ${id} has already finished (${run.outcome ?? run.stage}). <a href="${back}">Back</a></p>`,
        undefined,
        409,
      );
    const body = confirmBody({
      action: back + '/cancel',
      label: 'Cancel the run',
      target: html`<p><strong>${run.job.title}</strong> · ${run.job.repo} · <span class="state state-${run.stage}">${run.stage}</span></p>`,
      consequence:
        'Its worker stops it at its next heartbeat or stage and publishes nothing more; a cancelled run can be retried, not resumed.',
      back,
      csrf: formTokenOf(ctx, req),
    });
    return sendPage(reply, `Cancel run ${id}?`, body);
  });
  app.get<{ Params: { id: string } }>(
    '/dead-letters/:id/drop',
    { schema: { params: idParams } },
    async (req, reply) => {
      if (deps.readOnly) throw new HttpError(403, 'the dashboard is read-only');
      const id = req.params.id;
      const letter = (await deps.queue.deadLetters({ limit: deadLetterScan })).find((d) => d.id === id);
      if (letter === undefined)
        return sendPage(reply, 'No such dead letter', html`<p>No dead-lettered job ${id}.</p>`, undefined, 404);
      const body = confirmBody({
        action: `/dead-letters/${encodeURIComponent(id)}/drop`,
        label: 'Drop the job',
        target: html`<p><strong>${letter.job?.title ?? id}</strong>${letter.job === undefined ? '' : html` · ${letter.job.repo}`} · ${letter.reason}</p>`,
        consequence: 'The job leaves the dead-letter queue for good: it cannot be redriven afterwards.',
        back: '/dead-letters',
        csrf: formTokenOf(ctx, req),
      });
      return sendPage(reply, `Drop ${id}?`, body);
    },
  );
}

/**
 * A handler that runs one action on the `:id` of the path as the request's operator, and
 * answers with `back` as the page to return to.
 */
export function act(
  ctx: RouteContext,
  run: (deps: ActionDeps, id: string, body: Record<string, unknown>) => Promise<ActionResult>,
  back: (result: ActionResult, id: string) => string,
) {
  return async (req: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    if (ctx.deps.readOnly) throw new HttpError(403, 'the dashboard is read-only');
    ctx.checkCsrf(req);
    const operator = ctx.viewerOf(req)?.operator;
    if (operator === undefined) throw new HttpError(401, 'log in first');
    const body = req.body !== null && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
    const result = await run({ ...ctx.deps, by: operator }, req.params.id, body);
    const fromForm = (req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
    if (!fromForm)
      return reply.code(result.status).send({
        ok: result.status === 200,
        message: result.message,
        ...(result.runId === undefined ? {} : { runId: result.runId }),
      });
    if (result.status === 200) return reply.redirect(back(result, req.params.id), 303);
    return ctx.sendPage(
      reply,
      'Not done',
      html`<p class="error">${result.message}</p><p><a href="${back(result, req.params.id)}">Back</a></p>`,
      undefined,
      result.status,
    );
  };
}
