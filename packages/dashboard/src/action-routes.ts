import type { FastifyReply, FastifyRequest } from 'fastify';
import { cancelRun, dropDeadLetter, redriveDeadLetter, retryRun, type ActionResult } from './actions.js';
import { html } from './html.js';
import { HttpError, idParams, type RouteContext } from './route-context.js';

/**
 * The cancel / retry / redrive / drop actions (refused when read-only), each recorded in the
 * run store's journal. A form post is answered with a redirect back or a page saying why not;
 * a JSON post with `{ ok, message, runId? }`.
 */
export function addActionRoutes(ctx: RouteContext): void {
  const { app, deps } = ctx;
  const runPage = (result: ActionResult, id: string) => `/runs/${encodeURIComponent(result.runId ?? id)}`;
  app.post(
    '/runs/:id/cancel',
    { schema: { params: idParams } },
    act(ctx, (id) => cancelRun(deps, id), runPage),
  );
  app.post(
    '/runs/:id/retry',
    { schema: { params: idParams } },
    act(ctx, (id) => retryRun(deps, id), runPage),
  );
  app.post(
    '/dead-letters/:id/redrive',
    { schema: { params: idParams } },
    act(
      ctx,
      (id) => redriveDeadLetter(deps, id),
      (result) => (result.runId === undefined ? '/dead-letters' : `/runs/${encodeURIComponent(result.runId)}`),
    ),
  );
  // The reason is a form field or a JSON body's `reason`.
  app.post(
    '/dead-letters/:id/drop',
    { schema: { params: idParams } },
    act(
      ctx,
      (id, body) => dropDeadLetter(deps, id, typeof body.reason === 'string' ? body.reason : undefined),
      () => '/dead-letters',
    ),
  );
}

/** A handler that runs one action on the `:id` of the path and answers with `back` as the page to return to. */
function act(
  ctx: RouteContext,
  run: (id: string, body: Record<string, unknown>) => Promise<ActionResult>,
  back: (result: ActionResult, id: string) => string,
) {
  return async (req: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    if (ctx.deps.readOnly) throw new HttpError(403, 'the dashboard is read-only');
    ctx.checkCsrf(req);
    const body = req.body !== null && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
    const result = await run(req.params.id, body);
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
