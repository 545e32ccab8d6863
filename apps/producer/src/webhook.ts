import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhooks } from '@octokit/webhooks';
import { classify, readBounded } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import { deliveryIdOf, deliveryJob, readDelivery } from './delivery.js';

/** Settings of {@link startWebhookServer}. */
export interface WebhookOptions {
  /** The webhook secret configured on GitHub; requests not signed with it are refused. */
  secret: string;
  /** The label that turns an issue into a job (compared case-insensitively). */
  triggerLabel: string;
  /** Where deliveries are recorded before the answer: a queue of its own (see `createDeliveryProcessor`). */
  deliveries: Queue;
  /** Repositories (`owner/name`) whose deliveries are acted on; empty or absent: any repository. */
  repos?: readonly string[];
  port: number;
  host?: string;
  /** Largest accepted payload; GitHub caps deliveries at 25 MB. */
  maxBodyBytes?: number;
  now?: () => Date;
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

/**
 * Receives GitHub webhooks on `POST /webhook` (any path works). The signature
 * (`X-Hub-Signature-256`, HMAC-SHA256 of the raw body with the secret) is verified before
 * anything is parsed: a missing or wrong one is 401 and nothing happens. A delivery that
 * asks for something (the trigger label, `/codefleet retry|cancel`, a review) from an
 * allowed repository is **recorded durably** in `deliveries`, keyed by `X-GitHub-Delivery`,
 * before the answer: 202 means it is recorded, and the delivery processor acts on it with
 * retries; a replay of a recorded delivery is 202 `duplicate`. If the record cannot be
 * written the answer is 503 and nothing was promised. Every refusal is logged.
 */
export async function startWebhookServer(deps: { log: Logger }, options: WebhookOptions): Promise<WebhookServer> {
  const webhooks = new Webhooks({ secret: options.secret });
  const limit = options.maxBodyBytes ?? 25 * 1024 * 1024;
  const allowed = new Set((options.repos ?? []).map((r) => r.toLowerCase()));
  const now = options.now ?? (() => new Date());
  const reply = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  };

  const receive = async (req: IncomingMessage, res: ServerResponse) => {
    const header = req.headers['x-github-delivery'];
    const log = deps.log.child({
      delivery: typeof header === 'string' ? header.slice(0, 100) : undefined,
      github_event: req.headers['x-github-event'],
    });
    const refuse = (status: number, error: string, headers: Record<string, string> = {}) => {
      log.warn({ event: 'webhook.refused', status, reason: error }, `webhook refused: ${error}`);
      reply(res, status, { error }, headers);
    };
    if (req.method !== 'POST') return refuse(405, 'POST only');
    // Unread body bytes would be taken for the next request on this keep-alive connection:
    // a refused body closes the connection instead.
    if (Number(req.headers['content-length'] ?? 0) > limit)
      return refuse(413, 'payload too large', { connection: 'close' });
    const raw = await readBounded(req, limit);
    if (raw === undefined) return refuse(413, 'payload too large', { connection: 'close' });
    const text = raw.toString('utf8');
    const signature = req.headers['x-hub-signature-256'];
    const valid =
      typeof signature === 'string' && signature !== '' && (await webhooks.verify(text, signature).catch(() => false));
    if (!valid) return refuse(401, 'bad signature');
    const name = String(req.headers['x-github-event'] ?? '');
    const id = deliveryIdOf(typeof header === 'string' ? header : undefined, raw);
    if (id === undefined) return refuse(400, 'X-GitHub-Delivery is not a delivery id');
    let payload: unknown;
    try {
      payload = payloadOf(text, req.headers['content-type']);
    } catch (error) {
      return refuse(400, `payload is not JSON (${(error as Error).message})`);
    }
    const reading = readDelivery(name, payload, options.triggerLabel);
    if (reading.kind === 'invalid') return refuse(400, reading.reason);
    if (reading.kind === 'ignore') return reply(res, 202, { status: 'ignored', reason: reading.reason });
    const { intent } = reading;
    if (allowed.size > 0 && !allowed.has(intent.repo.toLowerCase())) {
      log.info(
        { event: 'webhook.repo_not_allowed', repo: intent.repo },
        'delivery from a repository not in forge.github.repos ignored',
      );
      return reply(res, 202, { status: 'ignored', reason: `${intent.repo} is not in forge.github.repos` });
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
      return reply(res, c.verdict === 'permanent' ? 422 : 503, { error: c.code, message: c.message });
    }
    log.info(
      { event: recorded.deduplicated ? 'webhook.duplicate' : 'webhook.recorded', kind: intent.kind, repo: intent.repo },
      'delivery recorded',
    );
    reply(res, 202, { status: recorded.deduplicated ? 'duplicate' : 'accepted', delivery: id });
  };

  const server: Server = createServer((req, res) => {
    receive(req, res).catch((error: unknown) => {
      deps.log.error({ err: error, event: 'webhook.failed' }, 'webhook handler failed');
      if (!res.headersSent)
        reply(res, 500, { error: error instanceof Error ? error.message : String(error) }, { connection: 'close' });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
