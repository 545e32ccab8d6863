import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { CodefleetError, taskStatusesOf, type PullRequestStatesReader } from '@codefleet/core';
import { cancelRun, dropDeadLetter, redriveDeadLetter, retryRun, type ActionResult } from './actions.js';
import { BackendError, guardBackends, isUnreadableRecord } from './backends.js';
import { bearerOf, cookieOf, derive, sessionCookie, tokenMatches } from './auth.js';
import type { DashboardDeps, DashboardQueue, DashboardStore } from './deps.js';
import { streamView } from './events.js';
import { html, type Html } from './html.js';
import { loginPage, page } from './pages/layout.js';
import { filtersOf, queryOf, runsBody } from './pages/runs.js';
import { deadLettersView, overviewView, runView } from './views.js';

/** Options of {@link createDashboard}. */
export interface DashboardOptions {
  queue: DashboardQueue;
  store: DashboardStore;
  /** The token a browser logs in with or a client sends as a bearer token; at least 16 characters. */
  token: string;
  /** Default 127.0.0.1: the dashboard can cancel work, so it is not exposed unless asked. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
  readOnly?: boolean;
  /** Worst-case wall time of a job from its first attempt, for the "past its worst case" warning. */
  worstCaseMs: number;
  /** The fleet's daily money budget (costs.budget_usd.day), for the overview's warning. */
  dayBudgetUsd?: number | undefined;
  /** Who actions are recorded as; default `dashboard`. */
  by?: string;
  /** How often live views are read again; default 2 s. */
  pollMs?: number;
  /** How long a queue or store call may take before the page says it cannot be reached; default 5 s. */
  backendTimeoutMs?: number;
  /** Live streams open at once (each reads the store every `pollMs`); default 32. */
  maxStreams?: number;
  /** Told about failures answered with a 5xx and failed live reads. */
  onError?: (error: unknown) => void;
  now?: () => Date;
  newId?: () => string;
  /** Pull request states for the derived task statuses (see `DashboardDeps.pullRequestStates`). */
  pullRequestStates?: PullRequestStatesReader;
}

/** A dashboard server. */
export interface Dashboard {
  /** Listens and resolves to its URL, e.g. `http://127.0.0.1:8790`. */
  listen(): Promise<string>;
  /** The URL once listening. */
  readonly url: string;
  /**
   * The dashboard as a Node request handler instead of a listener of its own: another
   * server (`codefleet serve`'s one port) passes it every request it does not serve itself.
   */
  handler(): Promise<(req: IncomingMessage, res: ServerResponse) => void>;
  close(): Promise<void>;
}

// The page loads only its own script and style sheet, talks only to its own origin, posts
// forms only to itself and cannot be framed: injected markup, if any got through, could
// neither run nor send anything anywhere.
const securityHeaders = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  // Not no-referrer: under it a browser sends `Origin: null` with its own form posts, which
  // the same-origin check must refuse. same-origin still sends nothing to other sites.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
} as const;

const assetsDir = new URL('../assets/', import.meta.url);
const assets: Record<string, { type: string; file: string }> = {
  'dashboard.js': { type: 'text/javascript; charset=utf-8', file: 'dashboard.js' },
  'dashboard.css': { type: 'text/css; charset=utf-8', file: 'dashboard.css' },
};

/** Shortest token accepted: a generated one has 32 characters. */
const minTokenLength = 16;

const idPattern = '^[A-Za-z0-9._:~-]{1,200}$';
const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: idPattern } },
} as const;

/** How a request proved it may use the dashboard. */
type Auth = 'bearer' | 'cookie' | undefined;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The dashboard on Fastify: server-rendered pages (overview, runs, a run, dead letters) with
 * live updates over server-sent events, and the cancel / retry / redrive / drop actions, each
 * recorded in the run store's journal. Every route but the login page and the two static
 * files needs the token: as a bearer header, or the session cookie the login form sets
 * (HttpOnly, SameSite=Strict). A POST authenticated by the cookie must also carry the form
 * token and, when the browser sends an Origin, come from this origin.
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const { token } = options;
  // No Host check: a proxy on the same host may pass its own Host on. A page of another
  // site that rebinds its name to 127.0.0.1 is same-origin to this server, but it never has
  // the session cookie (host-only) and can only guess tokens through the login form, so
  // the token must be too long to guess.
  if (token.length < minTokenLength) {
    throw new CodefleetError(
      'invalid_config',
      `the dashboard token must be at least ${minTokenLength} characters (a web page can try tokens against a loopback dashboard); unset it to have one generated, or use e.g. \`openssl rand -base64 24\``,
      { verdict: 'permanent' },
    );
  }
  const deps: DashboardDeps = {
    ...guardBackends(options.queue, options.store, options.backendTimeoutMs ?? 5000),
    worstCaseMs: options.worstCaseMs,
    dayBudgetUsd: options.dayBudgetUsd,
    readOnly: options.readOnly ?? false,
    by: options.by ?? 'dashboard',
    now: options.now ?? (() => new Date()),
    newId: options.newId ?? (() => `dash-${randomUUID()}`),
    ...(options.pullRequestStates === undefined ? {} : { pullRequestStates: options.pullRequestStates }),
  };
  const session = derive(token, 'session');
  const csrf = derive(token, 'csrf');
  const pollMs = options.pollMs ?? 2000;
  const maxStreams = options.maxStreams ?? 32;
  const files = Object.fromEntries(
    Object.entries(assets).map(([name, a]) => [name, { type: a.type, body: readFileSync(new URL(a.file, assetsDir)) }]),
  );
  const streams = new Set<() => void>();
  // maxParamLength: Fastify's default (100) is shorter than a job id (128) with its run suffix.
  // routerOptions: the top-level option is deprecated and warns on every start.
  const app = Fastify({ logger: false, bodyLimit: 16 * 1024, routerOptions: { maxParamLength: 256 } });
  let url = '';

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });

  const authOf = (req: FastifyRequest): Auth => {
    if (tokenMatches(bearerOf(req.headers.authorization), token)) return 'bearer';
    if (tokenMatches(cookieOf(req.headers.cookie, sessionCookie), session)) return 'cookie';
    return undefined;
  };
  /**
   * A browser's POST from another origin (login CSRF included) is refused before anything.
   * Hosts are compared, not schemes: behind a TLS proxy that passes Host on, the page's
   * origin is https while this server is reached over http. `Origin: null` is refused.
   */
  const crossOrigin = (req: FastifyRequest) => {
    const origin = req.headers.origin;
    if (origin === undefined) return false;
    try {
      return new URL(origin).host !== req.headers.host;
    } catch {
      return true;
    }
  };

  app.addHook('onSend', async (_req, reply, payload) => {
    reply.headers(securityHeaders);
    return payload;
  });
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0] ?? '';
    if (path === '/login' || path === '/favicon.ico' || path.startsWith('/assets/')) return;
    const auth = authOf(req);
    if (auth === undefined) {
      if (req.method === 'GET' && (req.headers.accept ?? '').includes('text/html'))
        return reply.redirect('/login', 303);
      throw new HttpError(401, 'log in, or send the dashboard token as a bearer token');
    }
    if (req.method === 'POST' && auth === 'cookie' && crossOrigin(req))
      throw new HttpError(403, 'cross-origin request refused');
    (req as FastifyRequest & { auth?: Auth }).auth = auth;
  });
  /** Cookie-authenticated writes carry the form token (field `csrf` or header `x-csrf-token`). */
  const checkCsrf = (req: FastifyRequest) => {
    if ((req as FastifyRequest & { auth?: Auth }).auth !== 'cookie') return;
    const body = req.body as Record<string, string> | undefined;
    const given =
      body?.csrf ?? (typeof req.headers['x-csrf-token'] === 'string' ? req.headers['x-csrf-token'] : undefined);
    if (!tokenMatches(given, csrf)) throw new HttpError(403, 'missing or wrong form token; reload the page');
  };

  const sendPage = (reply: FastifyReply, title: string, body: Html, live?: string, status = 200) =>
    reply
      .code(status)
      .type('text/html; charset=utf-8')
      .send(page(title, body, { csrf, readOnly: deps.readOnly }, live).text);

  app.setErrorHandler((error: Error & { statusCode?: number; validation?: unknown }, req, reply) => {
    if (error instanceof BackendError) {
      // Not a crash of the dashboard: say which backend is down, on a page when a browser asked.
      options.onError?.(error);
      if (!(req.headers.accept ?? '').includes('text/html'))
        return reply.code(503).type('text/plain; charset=utf-8').send(error.message);
      return sendPage(
        reply,
        'Unavailable',
        html`<p class="error-banner" role="alert" data-problem="${error.backend}">
          ${error.message}. Reload once it is back; the dashboard's log has the details.
        </p>`,
        undefined,
        503,
      );
    }
    if (isUnreadableRecord(error)) {
      options.onError?.(error);
      if (!(req.headers.accept ?? '').includes('text/html'))
        return reply.code(500).type('text/plain; charset=utf-8').send(error.message);
      return sendPage(
        reply,
        'Unreadable run record',
        html`<p class="error-banner" role="alert" data-problem="unreadable">
          ${error.message}. The other runs are not affected; see the <a href="/runs">runs</a>.
        </p>`,
        undefined,
        500,
      );
    }
    const status =
      error instanceof HttpError ? error.status : error.validation !== undefined ? 400 : (error.statusCode ?? 500);
    if (status >= 500) options.onError?.(error);
    const message = status >= 500 ? 'internal error' : error.message;
    return reply.code(status).type('text/plain; charset=utf-8').send(message);
  });

  app.get('/assets/:name', async (req, reply) => {
    const file = files[(req.params as { name: string }).name];
    if (file === undefined) throw new HttpError(404, 'not found');
    return reply.type(file.type).send(file.body);
  });

  // Browsers ask for it on every page; an empty answer keeps their consoles free of 404s.
  app.get('/favicon.ico', async (_req, reply) => reply.code(204).send());
  app.get('/login', async (_req, reply) => reply.type('text/html; charset=utf-8').send(loginPage(false).text));
  app.post('/login', async (req, reply) => {
    if (crossOrigin(req)) throw new HttpError(403, 'cross-origin request refused');
    const given = (req.body as Record<string, string> | undefined)?.token;
    if (!tokenMatches(given, token)) return reply.code(401).type('text/html; charset=utf-8').send(loginPage(true).text);
    reply.header('set-cookie', `${sessionCookie}=${session}; Path=/; HttpOnly; SameSite=Strict`);
    return reply.redirect('/', 303);
  });
  app.post('/logout', async (req, reply) => {
    checkCsrf(req);
    reply.header('set-cookie', `${sessionCookie}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
    return reply.redirect('/login', 303);
  });

  app.get('/', async (_req, reply) =>
    sendPage(reply, 'Overview', (await overviewView(deps)).body, '/events?view=overview'),
  );

  app.get('/runs', async (req, reply) => {
    const filters = filtersOf(req.query);
    const now = deps.now().getTime();
    const { query, ignored } = queryOf(filters, now, 200);
    const runs = await deps.store.list(query);
    const statuses = await taskStatusesOf(runs, deps.pullRequestStates);
    return sendPage(reply, 'Runs', runsBody(runs, filters, ignored, now, statuses));
  });

  app.get<{ Params: { id: string } }>('/runs/:id', { schema: { params: idParams } }, async (req, reply) => {
    const view = await runView(deps, req.params.id, { csrf });
    if (view === undefined)
      return sendPage(reply, 'No such run', html`<p>No run ${req.params.id}.</p>`, undefined, 404);
    return sendPage(
      reply,
      `Run ${req.params.id}`,
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

  app.get('/dead-letters', async (_req, reply) =>
    sendPage(reply, 'Dead letters', (await deadLettersView(deps, { csrf })).body),
  );

  app.get('/events', async (req, reply) => {
    const { view, id } = req.query as { view?: string; id?: string };
    const read =
      view === 'overview'
        ? () => overviewView(deps)
        : view === 'run' && id !== undefined && new RegExp(idPattern).test(id)
          ? () => runView(deps, id, { csrf })
          : undefined;
    if (read === undefined) throw new HttpError(400, 'view=overview, or view=run&id=<run id>');
    // Each stream reads the store every pollMs: their number bounds the load clients can make.
    if (streams.size >= maxStreams) throw new HttpError(503, 'too many live streams open; close some dashboard tabs');
    reply.hijack();
    reply.raw.writeHead(200, {
      ...securityHeaders,
      'content-type': 'text/event-stream; charset=utf-8',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    const stop = streamView(reply.raw, read, {
      pollMs,
      keepAliveMs: 15_000,
      ...(options.onError === undefined ? {} : { onError: options.onError }),
    });
    streams.add(stop);
    reply.raw.on('close', () => streams.delete(stop));
  });

  const act =
    (
      run: (id: string, body: Record<string, unknown>) => Promise<ActionResult>,
      back: (result: ActionResult, id: string) => string,
    ) =>
    async (req: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
      if (deps.readOnly) throw new HttpError(403, 'the dashboard is read-only');
      checkCsrf(req);
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
      return sendPage(
        reply,
        'Not done',
        html`<p class="error">${result.message}</p>
          <p><a href="${back(result, req.params.id)}">Back</a></p>`,
        undefined,
        result.status,
      );
    };
  const runPage = (result: ActionResult, id: string) => `/runs/${encodeURIComponent(result.runId ?? id)}`;
  app.post(
    '/runs/:id/cancel',
    { schema: { params: idParams } },
    act((id) => cancelRun(deps, id), runPage),
  );
  app.post(
    '/runs/:id/retry',
    { schema: { params: idParams } },
    act((id) => retryRun(deps, id), runPage),
  );
  app.post(
    '/dead-letters/:id/redrive',
    { schema: { params: idParams } },
    act(
      (id) => redriveDeadLetter(deps, id),
      (result) => (result.runId === undefined ? '/dead-letters' : `/runs/${encodeURIComponent(result.runId)}`),
    ),
  );
  // The reason is a form field or a JSON body's `reason`.
  app.post(
    '/dead-letters/:id/drop',
    { schema: { params: idParams } },
    act(
      (id, body) => dropDeadLetter(deps, id, typeof body.reason === 'string' ? body.reason : undefined),
      () => '/dead-letters',
    ),
  );

  app.addHook('preClose', async () => {
    for (const stop of streams) stop();
    streams.clear();
  });

  return {
    get url() {
      return url;
    },
    async listen() {
      await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
      const address = app.server.address() as AddressInfo;
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      url = `http://${host}:${address.port}`;
      return url;
    },
    async handler() {
      await app.ready();
      return (req, res) => app.routing(req, res);
    },
    async close() {
      await app.close();
    },
  };
}
