import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyReply } from 'fastify';
import { CodefleetError, type PullRequestStatesReader } from '@codefleet/core';
import { addLoginRoutes, guardAccess } from './access.js';
import { addActionRoutes } from './action-routes.js';
import { guardBackends } from './backends.js';
import type { DashboardDeps, DashboardQueue, DashboardStore } from './deps.js';
import { answerErrors } from './error-answers.js';
import type { Html } from './html.js';
import { addAssetRoutes, addLiveRoutes, addPageRoutes } from './page-routes.js';
import { page } from './pages/layout.js';
import { securityHeaders, type RouteContext } from './route-context.js';

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

/** Shortest token accepted: a generated one has 32 characters. */
const minTokenLength = 16;

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
  checkToken(token);
  const deps = dashboardDeps(options);
  // maxParamLength: Fastify's default (100) is shorter than a job id (128) with its run suffix.
  // routerOptions: the top-level option is deprecated and warns on every start.
  const app = Fastify({ logger: false, bodyLimit: 16 * 1024, routerOptions: { maxParamLength: 256 } });
  let url = '';

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.headers(securityHeaders);
    return payload;
  });
  const access = guardAccess(app, token);
  const ctx: RouteContext = {
    app,
    deps,
    csrf: access.csrf,
    checkCsrf: access.checkCsrf,
    sendPage: (reply: FastifyReply, title: string, body: Html, live?: string, status = 200) =>
      reply
        .code(status)
        .type('text/html; charset=utf-8')
        .send(page(title, body, { csrf: access.csrf, readOnly: deps.readOnly }, live).text),
    onError: options.onError,
  };
  answerErrors(ctx);
  addAssetRoutes(ctx);
  addLoginRoutes(app, token, access);
  addPageRoutes(ctx);
  addLiveRoutes(ctx, { pollMs: options.pollMs ?? 2000, maxStreams: options.maxStreams ?? 32 });
  addActionRoutes(ctx);

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

// No Host check: a proxy on the same host may pass its own Host on. A page of another site
// that rebinds its name to 127.0.0.1 is same-origin to this server, but it never has the
// session cookie (host-only) and can only guess tokens through the login form, so the token
// must be too long to guess.
function checkToken(token: string): void {
  if (token.length < minTokenLength) {
    throw new CodefleetError(
      'invalid_config',
      `the dashboard token must be at least ${minTokenLength} characters (a web page can try tokens against a loopback dashboard); unset it to have one generated, or use e.g. \`openssl rand -base64 24\``,
      { verdict: 'permanent' },
    );
  }
}

function dashboardDeps(options: DashboardOptions): DashboardDeps {
  return {
    ...guardBackends(options.queue, options.store, options.backendTimeoutMs ?? 5000),
    worstCaseMs: options.worstCaseMs,
    dayBudgetUsd: options.dayBudgetUsd,
    readOnly: options.readOnly ?? false,
    by: options.by ?? 'dashboard',
    now: options.now ?? (() => new Date()),
    newId: options.newId ?? (() => `dash-${randomUUID()}`),
    ...(options.pullRequestStates === undefined ? {} : { pullRequestStates: options.pullRequestStates }),
  };
}
