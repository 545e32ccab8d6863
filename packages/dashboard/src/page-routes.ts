import { readFileSync } from 'node:fs';
import { html } from './html.js';
import { positionOf } from './pages/pager.js';
import { runsListBody } from './runs-list.js';
import { formTokenOf, HttpError, idParams, type RouteContext } from './route-context.js';
import { readSuiteReport, readSuites } from './eval-read.js';
import { evalReportBody, evalSuitesBody } from './pages/eval.js';
import { deadLettersView, overviewView, runView } from './views.js';

/** A suite's digest in a path: 64 lower-case hex digits. */
const suiteParams = {
  type: 'object',
  required: ['suite'],
  properties: { suite: { type: 'string', pattern: '^[0-9a-f]{64}$' } },
} as const;

const assetsDir = new URL('../assets/', import.meta.url);
const assets = [
  { name: 'dashboard.js', type: 'text/javascript; charset=utf-8' },
  { name: 'dashboard.css', type: 'text/css; charset=utf-8' },
];

/** The page's script and style sheet, read once, and the favicon browsers ask for. */
export function addAssetRoutes(ctx: RouteContext): void {
  // A Map, not an object: `/assets/__proto__` must find nothing, not Object.prototype.
  const files = new Map(
    assets.map((a) => [a.name, { type: a.type, body: readFileSync(new URL(a.name, assetsDir)) }] as const),
  );
  ctx.app.get('/assets/:name', async (req, reply) => {
    const file = files.get((req.params as { name: string }).name);
    if (file === undefined) throw new HttpError(404, 'not found');
    return reply.type(file.type).send(file.body);
  });
  // Browsers ask for it on every page; an empty answer keeps their consoles free of 404s.
  ctx.app.get('/favicon.ico', async (_req, reply) => reply.code(204).send());
}

/** The pages: overview, runs, a run (and its record as JSON), dead letters. */
export function addPageRoutes(ctx: RouteContext): void {
  const { app, deps, sendPage } = ctx;
  app.get('/', async (_req, reply) =>
    sendPage(reply, 'Overview', (await overviewView(deps)).body, '/events?view=overview'),
  );

  app.get('/runs', async (req, reply) => sendPage(reply, 'Runs', await runsListBody(deps, req.query)));

  app.get<{ Params: { id: string } }>('/runs/:id', { schema: { params: idParams } }, async (req, reply) => {
    const view = await runView(deps, req.params.id, { csrf: formTokenOf(ctx, req) });
    if (view === undefined)
      return sendPage(reply, 'No such run', html`<p>No run ${req.params.id}.</p>`, undefined, 404);
    return sendPage(
      reply,
      // The task's title: what the reader knows the job by (the run id is in the summary).
      view.title ?? `Run ${req.params.id}`,
      view.body,
      `/events?view=run&id=${encodeURIComponent(req.params.id)}`,
    );
  });

  app.get<{ Params: { id: string } }>('/runs/:id/record.json', { schema: { params: idParams } }, async (req, reply) => {
    const run = await deps.store.get(req.params.id);
    if (run === undefined) throw new HttpError(404, `no run ${req.params.id}`);
    return reply
      .type('application/json; charset=utf-8')
      .header('content-disposition', `attachment; filename="run-${req.params.id}.json"`)
      .send(JSON.stringify(run, null, 2));
  });

  app.get('/eval', async (_req, reply) =>
    sendPage(reply, 'Evaluations', evalSuitesBody(await readSuites(deps), deps.now().getTime())),
  );

  app.get<{ Params: { suite: string } }>('/eval/:suite', { schema: { params: suiteParams } }, async (req, reply) => {
    const report = await readSuiteReport(deps, req.params.suite);
    if (report === undefined)
      return sendPage(reply, 'No such evaluation', html`<p>No run of suite ${req.params.suite}.</p>`, undefined, 404);
    return sendPage(reply, `Evaluation ${req.params.suite.slice(0, 12)}`, evalReportBody(report));
  });

  app.get('/dead-letters', async (req, reply) => {
    const from = positionOf((req.query as Record<string, unknown> | undefined)?.from);
    return sendPage(reply, 'Dead letters', (await deadLettersView(deps, { csrf: formTokenOf(ctx, req) }, from)).body);
  });
}
