import { createServer, type Server } from 'node:http';
import type { ChatService } from '@codefleet/chat';
import { CodefleetError } from '@codefleet/core';
import { GithubForge } from '@codefleet/forge';
import { queueSettingsFromConfig } from '@codefleet/queue';
import { requireFleetKey, type Runtime } from '../runtime.js';
import { untilSignal } from './producer.js';
import { createProducerMetrics, type ProducerMetrics } from './serve-metrics.js';
import { sideQueueSettings } from './side-queue.js';

/** The suffix of the queue LINE events are recorded in before their 200: `<queue.name>-line-inbox`. */
export const lineInboxSuffix = 'line-inbox';

/** The producers `codefleet serve` can host. */
export const producerNames = ['webhook', 'slack', 'line', 'http'] as const;

/** One of {@link producerNames}. */
export type ProducerName = (typeof producerNames)[number];

/** A producer started by {@link serve}. */
interface Started {
  name: ProducerName;
  /** Where it listens, for the start-up line. */
  where: string;
  /** Its local HTTP port, when it receives deliveries over HTTP (for the delivery metrics). */
  port?: number | undefined;
  close(): Promise<void>;
}

/**
 * The producers the config enables: the GitHub webhook when the forge is GitHub and its
 * secret is set, and each of `slack`, `line` and `http_api` whose `enabled` is true.
 */
export function enabledProducers(config: Runtime['config']): ProducerName[] {
  const names: ProducerName[] = [];
  if (config.forge.type === 'github' && config.forge.github.webhook_secret !== undefined) names.push('webhook');
  if (config.slack.enabled) names.push('slack');
  if (config.line.enabled) names.push('line');
  if (config.http_api.enabled) names.push('http');
  return names;
}

/**
 * `codefleet serve` (the enabled producers) and `codefleet producer slack|line|http` (one):
 * hosts the producers in one process until SIGTERM/SIGINT (or `options.signal`). They share
 * the queue, the run store, the requester (so a chat request's `queued` report goes where it
 * came from) and the chat service. With `healthPort`, `/healthz` answers for the container
 * and `/metrics` serves the producers' Prometheus metrics (see serve-metrics.ts).
 * Stopping closes the listeners first; what was accepted is already recorded or queued.
 */
export async function serve(
  rt: Runtime,
  options: {
    only?: ProducerName[];
    healthPort?: number;
    healthHost?: string;
    dashboardPort?: number;
    signal?: AbortSignal;
  },
  out: (line: string) => void,
): Promise<void> {
  requireFleetKey(rt);
  const names = options.only ?? enabledProducers(rt.config);
  // The dashboard with every producer: `--dashboard-port`, or `dashboard.enabled` on its port.
  const dashboardPort =
    options.only !== undefined
      ? undefined
      : (options.dashboardPort ?? (rt.config.dashboard.enabled ? rt.config.dashboard.port : undefined));
  if (names.length === 0 && dashboardPort === undefined) {
    throw new CodefleetError(
      'invalid_config',
      'no producer is enabled: set slack.enabled, line.enabled or http_api.enabled (or CODEFLEET_SLACK / CODEFLEET_LINE / CODEFLEET_HTTP_API=true), or forge.type github with its webhook secret',
    );
  }
  const stop = options.signal ? { signal: options.signal, dispose: () => undefined } : untilSignal();
  const started: Started[] = [];
  let health: Server | undefined;
  // Metrics only with a port to serve them on (prom-client loads then); the producers then
  // enqueue through a queue that counts.
  const metrics = options.healthPort === undefined ? undefined : await createProducerMetrics();
  const served: Runtime = metrics ? { ...rt, queue: metrics.counting(rt.queue) } : rt;
  let dashboard: { close(): Promise<void> } | undefined;
  try {
    if (dashboardPort !== undefined)
      dashboard = await (await import('./dashboard.js')).mountDashboard(rt, { port: dashboardPort }, out);
    const chat = names.some((n) => n === 'slack' || n === 'line') ? await chatService(served) : undefined;
    for (const name of names) started.push(await start(served, name, chat));
    for (const producer of started) if (producer.port !== undefined) metrics?.watch(producer.name, producer.port);
    if (options.healthPort !== undefined)
      health = await healthServer(options.healthPort, options.healthHost ?? '127.0.0.1', names, metrics);
    for (const producer of started) out(`${producer.name}: ${producer.where}`);
    await new Promise<void>((resolve) => {
      if (stop.signal.aborted) resolve();
      stop.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    stop.dispose();
    metrics?.close();
    await new Promise<void>((resolve) => (health ? health.close(() => resolve()) : resolve()));
    await dashboard?.close();
    for (const producer of started.reverse()) {
      await producer
        .close()
        .catch((err: unknown) =>
          rt.log.warn(
            { err, event: 'serve.close_failed', producer: producer.name },
            `could not stop ${producer.name} cleanly`,
          ),
        );
    }
  }
}

async function start(rt: Runtime, name: ProducerName, chat: ChatService | undefined): Promise<Started> {
  const { config } = rt;
  switch (name) {
    case 'webhook': {
      const { startGithubWebhook } = await import('./producer.js');
      const hook = await startGithubWebhook(rt, {});
      return { name, where: hook.where, port: hook.port, close: hook.close };
    }
    case 'line': {
      const { createLineWebhook } = await import('@codefleet/line');
      // Events are recorded here before LINE gets its 200, and handled from the record.
      const inbox = await rt.openQueue(sideQueueSettings(queueSettingsFromConfig(config), lineInboxSuffix));
      try {
        const webhook = createLineWebhook({
          config: config.line,
          chat: need(chat),
          store: rt.store,
          inbox,
          log: rt.log,
          secrets: rt.secrets,
        });
        await webhook.listen();
        const close = async () => {
          try {
            await webhook.close();
          } finally {
            await inbox.close();
          }
        };
        return { name, where: `LINE webhook on ${webhook.url}`, port: portOf(webhook.url), close };
      } catch (error) {
        await inbox.close();
        throw error;
      }
    }
    case 'http': {
      const { createHttpApi } = await import('@codefleet/http-api');
      const api = createHttpApi({
        config: config.http_api,
        queue: rt.queue,
        store: rt.store,
        requester: await rt.requester(),
        log: rt.log,
        secrets: rt.secrets,
      });
      await api.listen();
      return {
        name,
        where: `HTTP API on ${api.url}/v1/jobs (OpenAPI: ${api.url}/v1/openapi.json)`,
        port: portOf(api.url),
        close: () => api.close(),
      };
    }
    case 'slack': {
      const { startSlack } = await import('./serve-slack.js');
      return {
        name,
        ...(await startSlack(rt, need(chat))),
        port: config.slack.mode === 'http' ? config.slack.port : undefined,
      };
    }
  }
}

/** The chat service the chat producers share; GitHub work is checked against the forge's permissions. */
async function chatService(rt: Runtime): Promise<ChatService> {
  const { createChatService } = await import('@codefleet/chat');
  const forge = await rt.forge();
  return createChatService({
    queue: rt.queue,
    store: rt.store,
    requester: await rt.requester(),
    config: rt.config,
    log: rt.log,
    env: rt.loaded.env,
    ...(forge instanceof GithubForge
      ? { permission: (repo: string, login: string) => forge.issues.permission(repo, login) }
      : {}),
  });
}

function need(chat: ChatService | undefined): ChatService {
  if (chat === undefined) throw new CodefleetError('invalid_config', 'internal: the chat service was not opened');
  return chat;
}

function portOf(url: string): number | undefined {
  const port = Number(new URL(url).port);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

async function healthServer(
  port: number,
  host: string,
  names: readonly ProducerName[],
  metrics: ProducerMetrics | undefined,
): Promise<Server> {
  const server = createServer((req, res) => {
    if (metrics && req.method === 'GET' && req.url === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (err: unknown) =>
          res
            .writeHead(500, { 'content-type': 'text/plain' })
            .end(`metrics failed: ${err instanceof Error ? err.message : String(err)}\n`),
      );
      return;
    }
    const ok = req.method === 'GET' && req.url === '/healthz';
    res
      .writeHead(ok ? 200 : 404, { 'content-type': 'application/json' })
      .end(JSON.stringify(ok ? { status: 'ok', producers: names } : { error: 'not found' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
