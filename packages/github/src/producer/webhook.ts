import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Webhooks } from '@octokit/webhooks';
import { classify } from '@codefleet/core';
import { acceptRawBody, createHttpApp, listen, rawBodyOf } from '@codefleet/http-server';
import type { Logger } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import { deliveryIdOf, deliveryJob, readDelivery } from './delivery.js';

/** Settings of {@link githubWebhookRoutes}. */
export interface WebhookRouteOptions {
  /** The webhook secret configured on GitHub; requests not signed with it are refused. */
  secret: string;
  /** The label that turns an issue into a job (compared case-insensitively). */
  triggerLabel: string;
  /** Where deliveries are recorded before the answer: a queue of its own (see `createDeliveryProcessor`). */
  deliveries: Queue;
  /** Repositories (`owner/name`) whose deliveries are acted on; empty or absent: any repository. */
  repos?: readonly string[];
  /** Largest accepted payload; GitHub caps deliveries at 25 MB. */
  maxBodyBytes?: number;
  now?: () => Date;
}

/** Settings of {@link startWebhookServer}: the routes' settings and where to listen. */
export interface WebhookOptions extends WebhookRouteOptions {
  port: number;
  host?: string;
}

/** A running webhook receiver. */
export interface WebhookServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The JSON payload of a delivery: the body itself (`application/json`), or its `payload`
 * form field (`application/x-www-form-urlencoded`, GitHub's default content type).
 */
export function payloadOf(body: string, contentType: string | undefined): unknown {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase();
  const text = type === 'application/x-www-form-urlencoded' ? new URLSearchParams(body).get('payload') : body;
  if (text === null) throw new Error('the form has no payload field');
  return JSON.parse(text) as unknown;
}

/** An answer of {@link receiveDelivery}: the status and JSON body; `refused` when it is a refusal to log. */
interface Answer {
  status: number;
  body: unknown;
  refused?: string;
}

const refusal = (status: number, error: string): Answer => ({ status, body: { error }, refused: error });

/**
 * Reads one delivery whose raw body is `raw`: verify the signature over those bytes, then
 * parse, read, filter by repository and record it. Never throws for what the sender got
 * wrong; a failed record is a 503 (422 when retrying cannot help).
 */
async function receiveDelivery(
  context: {
    webhooks: Webhooks;
    options: WebhookRouteOptions;
    allowed: ReadonlySet<string>;
    log: Logger;
    now: () => Date;
  },
  headers: IncomingHttpHeaders,
  raw: Buffer,
): Promise<Answer> {
  const { webhooks, options, allowed, log, now } = context;
  const text = raw.toString('utf8');
  const signature = headers['x-hub-signature-256'];
  const valid =
    typeof signature === 'string' && signature !== '' && (await webhooks.verify(text, signature).catch(() => false));
  if (!valid) return refusal(401, 'bad signature');
  const name = String(headers['x-github-event'] ?? '');
  const header = headers['x-github-delivery'];
  const id = deliveryIdOf(typeof header === 'string' ? header : undefined, raw);
  if (id === undefined) return refusal(400, 'X-GitHub-Delivery is not a delivery id');
  let payload: unknown;
  try {
    payload = payloadOf(text, headers['content-type']);
  } catch (error) {
    return refusal(400, `payload is not JSON (${(error as Error).message})`);
  }
  const reading = readDelivery(name, payload, options.triggerLabel);
  if (reading.kind === 'invalid') return refusal(400, reading.reason);
  if (reading.kind === 'ignore') return { status: 202, body: { status: 'ignored', reason: reading.reason } };
  const { intent } = reading;
  if (allowed.size > 0 && !allowed.has(intent.repo.toLowerCase())) {
    log.info(
      { event: 'webhook.repo_not_allowed', repo: intent.repo },
      'delivery from a repository not in forge.github.repos ignored',
    );
    return { status: 202, body: { status: 'ignored', reason: `${intent.repo} is not in forge.github.repos` } };
  }
  let recorded: { deduplicated: boolean };
  try {
    recorded = await options.deliveries.enqueue(deliveryJob({ id, event: name, intent }, now()));
  } catch (error) {
    const c = classify(error);
    log.error(
      { err: error, event: 'webhook.record_failed', code: c.code },
      'could not record the delivery; answered 503',
    );
    return { status: c.verdict === 'permanent' ? 422 : 503, body: { error: c.code, message: c.message } };
  }
  log.info(
    { event: recorded.deduplicated ? 'webhook.duplicate' : 'webhook.recorded', kind: intent.kind, repo: intent.repo },
    'delivery recorded',
  );
  return { status: 202, body: { status: recorded.deduplicated ? 'duplicate' : 'accepted', delivery: id } };
}

/**
 * Receives GitHub webhooks: a Fastify plugin answering `POST` on any path under the prefix
 * it is registered at (`/webhook` on `codefleet serve`'s port). The signature
 * (`X-Hub-Signature-256`, HMAC-SHA256 of the raw body with the secret) is verified over the
 * exact bytes received before anything is parsed: a missing or wrong one is 401 and nothing
 * happens. A delivery that asks for something (the trigger label, `/codefleet retry|cancel`,
 * a review) from an allowed repository is **recorded durably** in `deliveries`, keyed by
 * `X-GitHub-Delivery`, before the answer: 202 means it is recorded, and the delivery
 * processor acts on it with retries; a replay of a recorded delivery is 202 `duplicate`. If
 * the record cannot be written the answer is 503 and nothing was promised. Every refusal is
 * logged.
 */
export function githubWebhookRoutes(deps: { log: Logger }, options: WebhookRouteOptions) {
  const context = {
    webhooks: new Webhooks({ secret: options.secret }),
    options,
    allowed: new Set((options.repos ?? []).map((r) => r.toLowerCase())),
    log: deps.log,
    now: options.now ?? (() => new Date()),
  };
  const limit = options.maxBodyBytes ?? 25 * 1024 * 1024;
  return async (scope: FastifyInstance): Promise<void> => {
    acceptRawBody(scope, limit);
    const logFor = (headers: IncomingHttpHeaders) => {
      const header = headers['x-github-delivery'];
      return deps.log.child({
        delivery: typeof header === 'string' ? header.slice(0, 100) : undefined,
        github_event: headers['x-github-event'],
      });
    };
    const refuse = (headers: IncomingHttpHeaders, status: number, error: string) => {
      logFor(headers).warn({ event: 'webhook.refused', status, reason: error }, `webhook refused: ${error}`);
      return { error };
    };
    scope.setErrorHandler((error: FastifyError, req, reply) => {
      // Unread body bytes would be taken for the next request on this keep-alive connection:
      // a refused body closes the connection instead.
      if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
        return reply
          .code(413)
          .header('connection', 'close')
          .send(refuse(req.headers, 413, 'payload too large'));
      deps.log.error({ err: error, event: 'webhook.failed' }, 'webhook handler failed');
      return reply.code(500).header('connection', 'close').send({ error: error.message });
    });
    const receive = async (req: FastifyRequest, reply: FastifyReply) => {
      if (req.method !== 'POST') return reply.code(405).send(refuse(req.headers, 405, 'POST only'));
      const answer = await receiveDelivery({ ...context, log: logFor(req.headers) }, req.headers, rawBodyOf(req.body));
      if (answer.refused !== undefined) refuse(req.headers, answer.status, answer.refused);
      return reply.code(answer.status).send(answer.body);
    };
    scope.all('/', receive);
    scope.all('/*', receive);
  };
}

/** Receives GitHub webhooks on a port of its own (`forge.github.webhook_port`); any path works. */
export async function startWebhookServer(deps: { log: Logger }, options: WebhookOptions): Promise<WebhookServer> {
  const app = createHttpApp();
  await app.register(githubWebhookRoutes(deps, options));
  const listening = await listen(app, {
    port: options.port,
    ...(options.host === undefined ? {} : { host: options.host }),
  });
  return { port: listening.port, close: listening.close };
}
