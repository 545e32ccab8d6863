import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DashboardDeps } from './deps.js';
import type { Html } from './html.js';

/** Who a request acts for, and how it proved it. */
export interface Viewer {
  /** The operator's name, as actions record it. */
  operator: string;
  /** A bearer token, the login form's session, or a trusted proxy's header. */
  via: 'bearer' | 'session' | 'proxy';
  /** The form token this viewer's pages carry; its writes must send it back (bearer ones need not). */
  csrf: string;
  /** Whom its live streams are counted against: a session, a proxy's user, a bearer client. */
  client: string;
}

/** What the dashboard's route groups share: the app they are added to and what its pages read. */
export interface RouteContext {
  app: FastifyInstance;
  deps: DashboardDeps;
  /** Who the request acts for (see `Viewer`); undefined on the open routes. */
  viewerOf(req: FastifyRequest): Viewer | undefined;
  /** Refuses a write without the viewer's form token, but a bearer's. */
  checkCsrf(req: FastifyRequest): void;
  /** Sends a whole page, with `live` the URL of its update stream. */
  sendPage(reply: FastifyReply, title: string, body: Html, live?: string, status?: number): FastifyReply;
  /** Told about failures answered with a 5xx and failed live reads. */
  onError?: ((error: unknown) => void) | undefined;
}

/** The form token of the request's viewer, for the forms of the page it is sent. */
export function formTokenOf(ctx: Pick<RouteContext, 'viewerOf'>, req: FastifyRequest): string {
  return ctx.viewerOf(req)?.csrf ?? '';
}

/** A failure answered with `status`, `headers` and the message as plain text. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

/** Run and dead-letter ids in paths: what a job id with its run suffix can hold. */
export const idPattern = '^[A-Za-z0-9._:~-]{1,200}$';
export const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: idPattern } },
} as const;

// The page loads only its own script and style sheet, talks only to its own origin, posts
// forms only to itself and cannot be framed: injected markup, if any got through, could
// neither run nor send anything anywhere.
export const securityHeaders = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  // Not no-referrer: under it a browser sends `Origin: null` with its own form posts, which
  // the same-origin check must refuse. same-origin still sends nothing to other sites.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
} as const;
