import type { FastifyReply, FastifyRequest } from 'fastify';
import { BackendError, isUnreadableRecord } from './backends.js';
import { html, type Html } from './html.js';
import { HttpError, type RouteContext } from './route-context.js';

/**
 * How failures are answered: a backend that cannot be reached (503) or a run record that
 * cannot be read (500) with a page when a browser asked, the rest as plain text; a 5xx tells
 * `onError` and shows no internals.
 */
export function answerErrors(ctx: RouteContext): void {
  ctx.app.setErrorHandler((error: Error & { statusCode?: number; validation?: unknown }, req, reply) => {
    if (error instanceof BackendError) {
      // Not a crash of the dashboard: say which backend is down, on a page when a browser asked.
      ctx.onError?.(error);
      return problemPage(ctx, req, reply, 503, error.message, {
        title: 'Unavailable',
        body: html`<p class="error-banner" role="alert" data-problem="${error.backend}">${error.message}. Reload once it is back; the dashboard's log has the details.</p>`,
      });
    }
    if (isUnreadableRecord(error)) {
      ctx.onError?.(error);
      return problemPage(ctx, req, reply, 500, error.message, {
        title: 'Unreadable run record',
        body: html`<p class="error-banner" role="alert" data-problem="unreadable">${error.message}. The other runs are not affected; see the <a href="/runs">runs</a>.</p>`,
      });
    }
    const status =
      error instanceof HttpError ? error.status : error.validation !== undefined ? 400 : (error.statusCode ?? 500);
    if (error instanceof HttpError) reply.headers(error.headers);
    if (status >= 500) ctx.onError?.(error);
    const message = status >= 500 ? 'internal error' : error.message;
    return reply.code(status).type('text/plain; charset=utf-8').send(message);
  });
}

function problemPage(
  ctx: RouteContext,
  req: FastifyRequest,
  reply: FastifyReply,
  status: number,
  message: string,
  page: { title: string; body: Html },
): FastifyReply {
  if (!(req.headers.accept ?? '').includes('text/html'))
    return reply.code(status).type('text/plain; charset=utf-8').send(message);
  return ctx.sendPage(reply, page.title, page.body, undefined, status);
}
