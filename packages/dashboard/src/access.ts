import { createHmac } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerOf, cookieOf, randomSecret, sessionCookie, tokenMatches } from './auth.js';
import type { LoginLimiter } from './login-limit.js';
import type { Operators } from './operators.js';
import { loginPage } from './pages/layout.js';
import { HttpError, type Viewer } from './route-context.js';
import type { Sessions } from './sessions.js';
import { proxyIdentity, type TrustedProxy } from './trusted-proxy.js';

/** What {@link guardAccess} needs. */
export interface AccessOptions {
  operators: Operators;
  sessions: Sessions;
  limiter: LoginLimiter;
  trustedProxy?: TrustedProxy | undefined;
  /** Seconds a session cookie lasts (its Max-Age). */
  sessionSeconds: number;
}

/** What {@link guardAccess} gives the routes. */
export interface Access {
  /** Who the request acts for; undefined on the open routes. */
  viewerOf(req: FastifyRequest): Viewer | undefined;
  /** Refuses a write without the viewer's form token (field `csrf` or header `x-csrf-token`), but a bearer's. */
  checkCsrf(req: FastifyRequest): void;
}

/** Routes anyone may ask for: the login form, the favicon, the page's script and style sheet. */
const openRoutes = new Set(['/login', '/favicon.ico', '/assets/:name']);

/**
 * Makes every route but the open ones need an operator: a bearer token, a trusted proxy's
 * header (from the proxy's address only), or the session cookie the login form sets, in
 * that order. Wrong bearer tokens count as failed logins. A write that is not a bearer's
 * must also come from this origin when the browser sends an Origin.
 */
export function guardAccess(app: FastifyInstance, options: AccessOptions): Access {
  const viewers = new WeakMap<FastifyRequest, Viewer>();
  const fromProxy = options.trustedProxy === undefined ? undefined : proxyIdentity(options.trustedProxy);
  // Proxy users have no session of their own: their form token is bound to their name, and a
  // restart (a new key) asks them to reload the page.
  const proxyKey = randomSecret();
  const identify = (req: FastifyRequest): Viewer | undefined => {
    const bearer = bearerOf(req.headers.authorization);
    if (bearer !== undefined) {
      refuseWhileLimited(options.limiter, req);
      const operator = options.operators.byToken(bearer);
      if (operator === undefined) {
        options.limiter.failed(req.ip);
        return undefined;
      }
      return { operator, via: 'bearer', csrf: '', client: `bearer:${operator}@${req.ip}` };
    }
    const named = fromProxy?.(req.socket.remoteAddress, req.headers);
    if (named !== undefined) {
      const csrf = createHmac('sha256', proxyKey).update(named).digest('base64url');
      return { operator: named, via: 'proxy', csrf, client: `proxy:${named}` };
    }
    const session = options.sessions.find(cookieOf(req.headers.cookie, sessionCookie));
    if (session === undefined) return undefined;
    return { operator: session.operator, via: 'session', csrf: session.csrf, client: `session:${session.key}` };
  };
  app.addHook('onRequest', async (req, reply) => {
    if (req.routeOptions.url !== undefined && openRoutes.has(req.routeOptions.url)) return;
    const viewer = identify(req);
    if (viewer === undefined) {
      if (req.method === 'GET' && (req.headers.accept ?? '').includes('text/html'))
        return reply.redirect('/login', 303);
      throw new HttpError(401, 'log in, or send a dashboard token as a bearer token');
    }
    if (req.method === 'POST' && viewer.via !== 'bearer' && crossOrigin(req))
      throw new HttpError(403, 'cross-origin request refused');
    viewers.set(req, viewer);
  });
  return {
    viewerOf: (req) => viewers.get(req),
    checkCsrf(req) {
      const viewer = viewers.get(req);
      if (viewer?.via === 'bearer') return;
      const body = req.body as Record<string, unknown> | undefined;
      const header = req.headers['x-csrf-token'];
      const given = typeof body?.csrf === 'string' ? body.csrf : typeof header === 'string' ? header : undefined;
      if (viewer === undefined || !tokenMatches(given, viewer.csrf))
        throw new HttpError(403, 'missing or wrong form token; reload the page');
    },
  };
}

/**
 * The login form, which opens a session (an HttpOnly, SameSite=Strict cookie with the
 * session's lifetime as Max-Age) for an operator's token, and logging out, which ends it.
 * Failed logins are limited per address and in all: past the limit the form answers 429
 * with Retry-After, without looking at the token.
 */
export function addLoginRoutes(app: FastifyInstance, options: AccessOptions, access: Access): void {
  const html = (reply: FastifyReply, status: number, text: string) =>
    reply.code(status).type('text/html; charset=utf-8').send(text);
  app.get('/login', async (_req, reply) => html(reply, 200, loginPage({ kind: 'form' }).text));
  app.post('/login', async (req, reply) => {
    if (crossOrigin(req)) throw new HttpError(403, 'cross-origin request refused');
    const waitMs = options.limiter.waitMs(req.ip);
    if (waitMs > 0) {
      const seconds = Math.ceil(waitMs / 1000);
      reply.header('retry-after', String(seconds));
      return html(reply, 429, loginPage({ kind: 'limited', seconds }).text);
    }
    const given = (req.body as Record<string, unknown> | undefined)?.token;
    const operator = options.operators.byToken(typeof given === 'string' ? given : undefined);
    if (operator === undefined) {
      options.limiter.failed(req.ip);
      return html(reply, 401, loginPage({ kind: 'failed' }).text);
    }
    // A login from a browser already logged in replaces its session rather than adding one.
    options.sessions.close(cookieOf(req.headers.cookie, sessionCookie));
    const { id } = options.sessions.open(operator);
    reply.header('set-cookie', cookie(id, options.sessionSeconds));
    return reply.redirect('/', 303);
  });
  app.post('/logout', async (req, reply) => {
    access.checkCsrf(req);
    if (access.viewerOf(req)?.via === 'session') options.sessions.close(cookieOf(req.headers.cookie, sessionCookie));
    reply.header('set-cookie', cookie('', 0));
    return reply.redirect('/login', 303);
  });
}

function cookie(value: string, maxAgeSeconds: number): string {
  return `${sessionCookie}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}`;
}

/** Past the failed-login limit, a bearer token is not even looked at. */
function refuseWhileLimited(limiter: LoginLimiter, req: FastifyRequest): void {
  const waitMs = limiter.waitMs(req.ip);
  if (waitMs > 0)
    throw new HttpError(429, 'too many wrong tokens from this address; wait and try again', {
      'retry-after': String(Math.ceil(waitMs / 1000)),
    });
}

/**
 * A browser's POST from another origin (login CSRF included) is refused before anything.
 * Hosts are compared, not schemes: behind a TLS proxy that passes Host on, the page's
 * origin is https while this server is reached over http. `Origin: null` is refused.
 */
function crossOrigin(req: FastifyRequest): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true;
  }
}
