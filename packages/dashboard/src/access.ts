import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bearerOf, cookieOf, derive, sessionCookie, tokenMatches } from './auth.js';
import { loginPage } from './pages/layout.js';
import { HttpError } from './route-context.js';

/** How a request proved it may use the dashboard. */
type Auth = 'bearer' | 'cookie' | undefined;

/** What {@link guardAccess} gives the routes. */
export interface Access {
  /** The session cookie's value, set by the login form. */
  session: string;
  /** The form token every page's forms carry. */
  csrf: string;
  /** Cookie-authenticated writes carry the form token (field `csrf` or header `x-csrf-token`). */
  checkCsrf(req: FastifyRequest): void;
}

/**
 * Makes every route but the login page, the favicon and the static files need the token: as
 * a bearer header, or the session cookie the login form sets. A POST authenticated by the
 * cookie must also come from this origin when the browser sends an Origin.
 */
export function guardAccess(app: FastifyInstance, token: string): Access {
  const session = derive(token, 'session');
  const csrf = derive(token, 'csrf');
  const authOf = (req: FastifyRequest): Auth => {
    if (tokenMatches(bearerOf(req.headers.authorization), token)) return 'bearer';
    if (tokenMatches(cookieOf(req.headers.cookie, sessionCookie), session)) return 'cookie';
    return undefined;
  };
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
  return {
    session,
    csrf,
    checkCsrf(req) {
      if ((req as FastifyRequest & { auth?: Auth }).auth !== 'cookie') return;
      const body = req.body as Record<string, string> | undefined;
      const given =
        body?.csrf ?? (typeof req.headers['x-csrf-token'] === 'string' ? req.headers['x-csrf-token'] : undefined);
      if (!tokenMatches(given, csrf)) throw new HttpError(403, 'missing or wrong form token; reload the page');
    },
  };
}

/**
 * The login form, which sets the session cookie (HttpOnly, SameSite=Strict) for the right
 * token, and logging out, which clears it.
 */
export function addLoginRoutes(app: FastifyInstance, token: string, access: Access): void {
  app.get('/login', async (_req, reply) => reply.type('text/html; charset=utf-8').send(loginPage(false).text));
  app.post('/login', async (req, reply) => {
    if (crossOrigin(req)) throw new HttpError(403, 'cross-origin request refused');
    const given = (req.body as Record<string, string> | undefined)?.token;
    if (!tokenMatches(given, token)) return reply.code(401).type('text/html; charset=utf-8').send(loginPage(true).text);
    reply.header('set-cookie', `${sessionCookie}=${access.session}; Path=/; HttpOnly; SameSite=Strict`);
    return reply.redirect('/', 303);
  });
  app.post('/logout', async (req, reply) => {
    access.checkCsrf(req);
    reply.header('set-cookie', `${sessionCookie}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
    return reply.redirect('/login', 303);
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
