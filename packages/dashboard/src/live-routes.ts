import { refuseStream, streamView } from './events.js';
import { HttpError, idPattern, securityHeaders, formTokenOf, type RouteContext } from './route-context.js';
import { SharedReads } from './shared-reads.js';
import { overviewView, readRunView, renderRunView, type View } from './views.js';

/** How many live streams may be open, and how often each reads. */
export interface LiveLimits {
  pollMs: number;
  /** Streams open at once, in all: the streams of one view share one store read every `pollMs`. */
  maxStreams: number;
  /** Streams one client (a session, a proxy's user, a bearer client) may hold of them. */
  maxStreamsPerClient: number;
}

/** A view whose markup is made only when a stream sends it: most reads find nothing changed. */
function lazyView(fingerprint: string, render: () => View['body']): View {
  return {
    fingerprint,
    get body() {
      return render();
    },
  };
}

/** How long a refused page waits before it asks again. */
const refusedRetryMs = 30_000;

/**
 * The live updates of the overview and of a run page, as server-sent events; at most
 * `maxStreams` open at once and `maxStreamsPerClient` per client, so one browser with many
 * tabs (or one script) cannot take every stream from the others. A stream past a bound is
 * answered with a `refused` event the page shows as a banner, and asks again later by
 * itself. All stop when the server closes.
 */
export function addLiveRoutes(ctx: RouteContext, limits: LiveLimits): void {
  const { app, deps } = ctx;
  const streams = new Set<() => void>();
  const perClient = new Map<string, number>();
  // Every tab of a view reads through this: one store read per view and interval, however
  // many tabs poll it (the markup of a run page is still each viewer's: it holds their form token).
  const shared = new SharedReads(limits.pollMs);
  app.get('/events', async (req, reply) => {
    const { view, id } = req.query as { view?: unknown; id?: unknown };
    const csrf = formTokenOf(ctx, req);
    const read =
      view === 'overview'
        ? () => shared.read('overview', () => overviewView(deps))
        : view === 'run' && typeof id === 'string' && new RegExp(idPattern).test(id)
          ? async () => {
              const facts = await shared.read(`run:${id}`, () => readRunView(deps, id));
              return facts === undefined
                ? undefined
                : lazyView(facts.fingerprint, () => renderRunView(deps, facts, { csrf }).body);
            }
          : undefined;
    if (read === undefined) throw new HttpError(400, 'view=overview, or view=run&id=<run id>');
    const client = ctx.viewerOf(req)?.client ?? req.ip;
    const held = perClient.get(client) ?? 0;
    reply.hijack();
    reply.raw.writeHead(200, {
      ...securityHeaders,
      'content-type': 'text/event-stream; charset=utf-8',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    if (held >= limits.maxStreamsPerClient)
      return refuseStream(
        reply.raw,
        `Live updates paused: too many live views are open in this browser (at most ${limits.maxStreamsPerClient}); close a tab and this one resumes within ${refusedRetryMs / 1000} s.`,
        refusedRetryMs,
      );
    if (streams.size >= limits.maxStreams)
      return refuseStream(
        reply.raw,
        `Live updates paused: the dashboard has as many live views open as it serves (${limits.maxStreams}); this page tries again every ${refusedRetryMs / 1000} s.`,
        refusedRetryMs,
      );
    const stop = streamView(reply.raw, read, {
      pollMs: limits.pollMs,
      keepAliveMs: 15_000,
      ...(ctx.onError === undefined ? {} : { onError: ctx.onError }),
    });
    streams.add(stop);
    perClient.set(client, held + 1);
    reply.raw.on('close', () => {
      streams.delete(stop);
      const left = (perClient.get(client) ?? 1) - 1;
      if (left > 0) perClient.set(client, left);
      else perClient.delete(client);
    });
  });
  app.addHook('preClose', async () => {
    for (const stop of streams) stop();
    streams.clear();
  });
}
