import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhooks } from '@octokit/webhooks';
import { classify } from '@codefleet/core';
import { cancelFromIssue, followUpFromReview, triggerFromIssue, type TriggerDeps, type TriggerOutcome, type TriggerRequest } from './trigger.js';

/** Settings of {@link startWebhookServer}. */
export interface WebhookOptions {
  /** The webhook secret configured on GitHub; requests not signed with it are refused. */
  secret: string;
  /** The label that turns an issue into a job (compared case-insensitively). */
  triggerLabel: string;
  port: number;
  host?: string;
  /** Largest accepted payload; GitHub caps deliveries at 25 MB. */
  maxBodyBytes?: number;
}

/** A running webhook receiver. */
export interface WebhookServer {
  readonly port: number;
  close(): Promise<void>;
}

async function readRaw(req: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Receives GitHub webhooks on `POST /webhook` (any path works). The signature
 * (`X-Hub-Signature-256`, HMAC-SHA256 of the raw body with the secret) is verified before
 * anything is parsed: a missing or wrong one is 401 and nothing happens. `issues.labeled`
 * with the trigger label starts {@link triggerFromIssue}; other events are acknowledged
 * and ignored. Transient failures answer 503 so GitHub's redelivery retries; the
 * idempotency key makes that safe.
 */
export async function startWebhookServer(deps: TriggerDeps, options: WebhookOptions): Promise<WebhookServer> {
  const webhooks = new Webhooks({ secret: options.secret });
  const trigger = options.triggerLabel.toLowerCase();
  const reply = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== 'POST') return reply(res, 405, { error: 'POST only' });
      const payload = await readRaw(req, options.maxBodyBytes ?? 25 * 1024 * 1024);
      if (payload === undefined) return reply(res, 413, { error: 'payload too large' });
      const signature = req.headers['x-hub-signature-256'];
      const valid = typeof signature === 'string' && signature !== '' && await webhooks.verify(payload, signature).catch(() => false);
      if (!valid) {
        deps.log.warn({ event: 'webhook.bad_signature', delivery: req.headers['x-github-delivery'] }, 'webhook refused: missing or wrong signature');
        return reply(res, 401, { error: 'bad signature' });
      }
      const name = String(req.headers['x-github-event'] ?? '');
      const delivery = String(req.headers['x-github-delivery'] ?? '');
      let event: {
        action?: string; label?: { name?: string }; issue?: { number?: number; pull_request?: unknown };
        comment?: { body?: string; user?: { login?: string } }; repository?: { full_name?: string }; sender?: { login?: string };
        review?: { id?: number; body?: string | null; state?: string };
        pull_request?: { number?: number; head?: { ref?: string; repo?: { full_name?: string } | null } };
      };
      try {
        event = JSON.parse(payload) as typeof event;
      } catch {
        return reply(res, 400, { error: 'payload is not JSON' });
      }
      if (name === 'pull_request_review' && event.action === 'submitted') {
        const pr = event.pull_request;
        const repo = event.repository?.full_name;
        const actor = event.sender?.login;
        if (!repo || !actor || !pr?.number) return reply(res, 400, { error: 'pull_request_review without repository, pull request or sender' });
        try {
          return reply(res, 202, await followUpFromReview(deps, {
            repo, issueNumber: pr.number, actor, via: `webhook ${delivery}`, pullNumber: pr.number,
            headRef: pr.head?.ref ?? '', headRepo: pr.head?.repo?.full_name ?? '', reviewBody: event.review?.body ?? '', reviewState: event.review?.state ?? '',
            ...(typeof event.review?.id === 'number' ? { reviewId: event.review.id } : {}),
          }));
        } catch (error) {
          const c = classify(error);
          return reply(res, c.verdict === 'transient' ? 503 : 422, { error: c.code, message: c.message });
        }
      }
      const labeled = name === 'issues' && event.action === 'labeled' && event.label?.name?.toLowerCase() === trigger;
      // `/codefleet retry` or `/codefleet cancel` as the first line of a new issue comment.
      const command = name === 'issue_comment' && event.action === 'created' && !event.issue?.pull_request
        ? /^\s*\/codefleet\s+(retry|cancel)\b/i.exec(event.comment?.body ?? '')?.[1]?.toLowerCase()
        : undefined;
      if (!labeled && command === undefined) {
        return reply(res, 202, { status: 'ignored', reason: `${name}.${event.action ?? ''} is not a codefleet trigger` });
      }
      const repo = event.repository?.full_name;
      const issueNumber = event.issue?.number;
      const actor = event.sender?.login;
      if (!repo || !issueNumber || !actor) return reply(res, 400, { error: `${name} event without repository, issue or sender` });
      const request: TriggerRequest = { repo, issueNumber, actor, via: `webhook ${delivery}` };
      let outcome: TriggerOutcome;
      try {
        outcome = command === 'cancel' ? await cancelFromIssue(deps, request) : await triggerFromIssue(deps, request);
      } catch (error) {
        const c = classify(error);
        deps.log.error({ err: error, event: 'webhook.trigger_failed', code: c.code }, c.message);
        return reply(res, c.verdict === 'transient' ? 503 : 422, { error: c.code, message: c.message });
      }
      reply(res, 202, outcome);
    })().catch((error: unknown) => {
      if (!res.headersSent) reply(res, 500, { error: error instanceof Error ? error.message : String(error) });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}
