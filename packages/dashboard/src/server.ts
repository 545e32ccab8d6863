import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyReply } from 'fastify';
import { CodefleetError, type PullRequestStatesReader } from '@codefleet/core';
import { addLoginRoutes, guardAccess, type AccessOptions } from './access.js';
import { addActionRoutes } from './action-routes.js';
import { guardBackends } from './backends.js';
import type { DashboardDeps, DashboardQueue, DashboardStore, ReportCancelled } from './deps.js';
import { answerErrors } from './error-answers.js';
import type { Html } from './html.js';
import { addLiveRoutes } from './live-routes.js';
import { addQueueRoutes } from './queue-routes.js';
import { defaultLoginLimits, LoginLimiter, type LoginLimits } from './login-limit.js';
import { Operators } from './operators.js';
import { addAssetRoutes, addPageRoutes } from './page-routes.js';
import { page } from './pages/layout.js';
import { formTokenOf, securityHeaders, type RouteContext } from './route-context.js';
import { Sessions } from './sessions.js';
import type { TrustedProxy } from './trusted-proxy.js';

/** Options of {@link createDashboard}. */
export interface DashboardOptions {
  queue: DashboardQueue;
  store: DashboardStore;
  /**
   * Operator name → token (at least 16 characters each): a browser logs in with it, a client
   * sends it as a bearer token, and what either does is recorded under that name.
   */
  operators?: Readonly<Record<string, string>>;
  /** A reverse proxy that signs people in and names them in a header, believed only from its addresses. */
  trustedProxy?: TrustedProxy | undefined;
  /** Default 127.0.0.1: the dashboard can cancel work, so it is not exposed unless asked. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
  readOnly?: boolean;
  /** Worst-case wall time of a job from its first attempt, for the "past its worst case" warning. */
  worstCaseMs: number;
  /** The fleet's daily money budget (costs.budget_usd.day), for the overview's warning. */
  dayBudgetUsd?: number | undefined;
  /** How long the overview's charts reuse one read of the store's day totals; default 60 s. */
  statsMaxAgeMs?: number;
  /** How long a login lasts from the moment it was made; default 12 h. */
  sessionTtlMs?: number;
  /** Logins kept at once (the oldest goes first); default 1000. */
  maxSessions?: number;
  /** Failed logins let through per address and in all; default {@link defaultLoginLimits}. */
  loginLimits?: LoginLimits;
  /** How often live views are read again; default 2 s. */
  pollMs?: number;
  /** How long a queue or store call may take before the page says it cannot be reached; default 5 s. */
  backendTimeoutMs?: number;
  /** Live streams open at once (the streams of one view share a store read every `pollMs`); default 32. */
  maxStreams?: number;
  /**
   * Live streams one client may hold; default 4. A browser opens at most 6 connections to a
   * host over HTTP/1.1: past that its tabs stop loading pages at all, not only updating.
   */
  maxStreamsPerClient?: number;
  /** Told about failures answered with a 5xx and failed live reads. */
  onError?: (error: unknown) => void;
  /** The clock of pages, the journal, sessions and the login limit. */
  now?: () => Date;
  newId?: () => string;
  /** Pull request states for the derived task statuses (see `DashboardDeps.pullRequestStates`). */
  pullRequestStates?: PullRequestStatesReader;
  /** Reports a job cancelled in the queue to whoever asked for it (see `DashboardDeps.reportCancelled`). */
  reportCancelled?: ReportCancelled;
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

/**
 * The dashboard on Fastify: server-rendered pages (overview, runs, a run, dead letters) with
 * live updates over server-sent events, and the cancel / retry / redrive / drop actions, each
 * recorded in the run store's journal under the operator who took it. Every route but the
 * login page and the two static files needs an operator: a bearer token, a trusted proxy's
 * header, or the session the login form opens (an HttpOnly, SameSite=Strict cookie). A
 * write that is not a bearer's must also carry the form token and, when the browser sends
 * an Origin, come from this origin.
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const deps = dashboardDeps(options);
  const access = accessOptions(options, deps);
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
  const guard = guardAccess(app, access);
  const ctx: RouteContext = {
    app,
    deps,
    viewerOf: guard.viewerOf,
    checkCsrf: guard.checkCsrf,
    sendPage: (reply: FastifyReply, title: string, body: Html, live?: string, status = 200) => {
      const viewer = guard.viewerOf(reply.request);
      const frame = {
        csrf: formTokenOf(guard, reply.request),
        readOnly: deps.readOnly,
        operator: viewer?.operator,
        canLogOut: viewer?.via !== 'proxy',
      };
      return reply
        .code(status)
        .type('text/html; charset=utf-8')
        .send(page(title, body, frame, live).text);
    },
    onError: options.onError,
  };
  answerErrors(ctx);
  addAssetRoutes(ctx);
  addLoginRoutes(app, access, guard);
  addPageRoutes(ctx);
  addLiveRoutes(ctx, {
    pollMs: options.pollMs ?? 2000,
    maxStreams: options.maxStreams ?? 32,
    maxStreamsPerClient: options.maxStreamsPerClient ?? 4,
  });
  addActionRoutes(ctx);
  addQueueRoutes(ctx);

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

/** Who may come in and how: the operators' tokens, the proxy, sessions and the login limit. */
function accessOptions(options: DashboardOptions, deps: DashboardDeps): AccessOptions {
  const operators = new Operators(options.operators ?? {});
  if (operators.size === 0 && options.trustedProxy === undefined)
    throw new CodefleetError(
      'invalid_config',
      'the dashboard lets no one in: give it a token (dashboard.token_env or dashboard.operators) or a trusted proxy',
      { verdict: 'permanent' },
    );
  const sessionTtlMs = options.sessionTtlMs ?? 12 * 3_600_000;
  const now = () => deps.now().getTime();
  return {
    operators,
    trustedProxy: options.trustedProxy,
    sessions: new Sessions({ ttlMs: sessionTtlMs, max: options.maxSessions ?? 1000, now }),
    limiter: new LoginLimiter(options.loginLimits ?? defaultLoginLimits, now),
    sessionSeconds: Math.floor(sessionTtlMs / 1000),
  };
}

function dashboardDeps(options: DashboardOptions): DashboardDeps {
  return {
    ...guardBackends(options.queue, options.store, options.backendTimeoutMs ?? 5000),
    worstCaseMs: options.worstCaseMs,
    dayBudgetUsd: options.dayBudgetUsd,
    statsMaxAgeMs: options.statsMaxAgeMs,
    readOnly: options.readOnly ?? false,
    now: options.now ?? (() => new Date()),
    newId: options.newId ?? (() => `dash-${randomUUID()}`),
    ...(options.pullRequestStates === undefined ? {} : { pullRequestStates: options.pullRequestStates }),
    ...(options.reportCancelled === undefined ? {} : { reportCancelled: options.reportCancelled }),
  };
}
