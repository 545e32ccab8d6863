import type { FastifyInstance } from 'fastify';
import type { ChatService } from '@codefleet/chat';
import { CodefleetError } from '@codefleet/core';
import { GithubForge } from '@codefleet/github';
import { createHttpApp, listen, mountNodeHandler, type Listening, type NodeHandler } from '@codefleet/http-server';
import { queueSettingsFromConfig } from '@codefleet/queue';
import { startHousekeeping } from '@codefleet/worker';
import { requireFleetKey, type Runtime } from '../runtime.js';
import { untilSignal } from './producer.js';
import { healthRoutes, listenHealth, ownPort, serveDashboard, servePrefixes } from './serve-http.js';
import { createProducerMetrics } from './serve-metrics.js';
import { sideQueueSettings } from './side-queue.js';
import { storeHousekeeping } from '../retention.js';

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
  /** Its own local HTTP port, when it receives deliveries on one (for the delivery metrics). */
  port?: number | undefined;
  /** Its route prefix when it is served on the shared port. */
  prefix?: string | undefined;
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
 * came from) and the chat service, and one port (`serve.port`): the GitHub webhook at
 * /webhook, LINE at /line, the HTTP API at /v1, the dashboard at /, `/healthz` for the
 * container and `/metrics` with the producers' Prometheus metrics (see serve-metrics.ts).
 * Slack's HTTP events are at /slack/events. A surface whose own port is configured listens
 * there instead. `healthPort` serves /healthz and /metrics on a port of their own as well.
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
  // The dashboard with every producer: `--dashboard-port`, or `dashboard.enabled`.
  const withDashboard =
    options.only === undefined && (options.dashboardPort !== undefined || rt.config.dashboard.enabled);
  if (names.length === 0 && !withDashboard) {
    throw new CodefleetError(
      'invalid_config',
      'no producer is enabled: set slack.enabled, line.enabled or http_api.enabled (or CODEFLEET_SLACK / CODEFLEET_LINE / CODEFLEET_HTTP_API=true), or forge.type github with its webhook secret',
    );
  }
  const stop = options.signal ? { signal: options.signal, dispose: () => undefined } : untilSignal();
  const started: Started[] = [];
  // The producers enqueue through a queue that counts, for /metrics.
  const metrics = await createProducerMetrics();
  const served: Runtime = { ...rt, queue: metrics.counting(rt.queue) };
  // Strict validation is the HTTP API's (an unknown field is a 400); the other surfaces have no body schema.
  const app = createHttpApp({ strictValidation: true });
  let shared: Listening | undefined;
  let health: Listening | undefined;
  let dashboard: { close(): Promise<void> } | undefined;
  // Retention (store.retention) runs beside the producers, in the background.
  const housekeeping = startHousekeeping({ ...storeHousekeeping(rt), log: rt.log, onTrimmed: metrics.trimmed });
  try {
    const chat = names.some((n) => n === 'slack' || n === 'line') ? await chatService(served) : undefined;
    for (const name of names) started.push(await start(served, name, chat, app));
    healthRoutes(app, names, metrics);
    if (withDashboard)
      dashboard = await serveDashboard(rt, options.dashboardPort ?? ownPort(rt, rt.config.dashboard.port), app, out);
    shared = await listen(app, { port: rt.config.serve.port, host: rt.config.serve.host });
    for (const producer of started)
      if (producer.port !== undefined || producer.prefix !== undefined)
        metrics.watch(producer.name, producer.port ?? shared.port, producer.prefix);
    if (options.healthPort !== undefined)
      health = await listenHealth(options.healthPort, options.healthHost ?? '127.0.0.1', names, metrics);
    out(`serving on ${shared.url} (/healthz, /metrics)`);
    for (const producer of started) out(`${producer.name}: ${producer.where}`);
    await new Promise<void>((resolve) => {
      if (stop.signal.aborted) resolve();
      stop.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    stop.dispose();
    await housekeeping.stop();
    metrics.close();
    await health?.close();
    await (shared?.close() ?? app.close());
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

/** Starts one producer: on its own port when it has one ({@link ownPort}), else as routes of `app`. */
async function start(
  rt: Runtime,
  name: ProducerName,
  chat: ChatService | undefined,
  app: FastifyInstance,
): Promise<Started> {
  const { config } = rt;
  switch (name) {
    case 'webhook': {
      const { startGithubWebhook } = await import('./producer.js');
      const port = ownPort(rt, config.forge.github.webhook_port);
      const hook = await startGithubWebhook(rt, port === undefined ? { into: app } : { port });
      return {
        name,
        where: hook.where,
        port: hook.port,
        prefix: hook.port ? undefined : servePrefixes.webhook,
        close: hook.close,
      };
    }
    case 'line':
      return startLine(rt, need(chat), app);
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
      if (ownPort(rt, config.http_api.port) === undefined) {
        await app.register(api.routes);
        const where = 'HTTP API at /v1/jobs on the serve port (OpenAPI: /v1/openapi.json)';
        return { name, where, prefix: servePrefixes.http, close: () => api.close() };
      }
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
      if (config.slack.mode === 'socket') return { name, ...(await startSlack(rt, need(chat))) };
      const port = ownPort(rt, config.slack.port);
      if (port !== undefined) return { name, ...(await startSlack(rt, need(chat))), port };
      const mount = (handler: NodeHandler) => mountNodeHandler(app, servePrefixes.slack, handler);
      return { name, ...(await startSlack(rt, need(chat), mount)), prefix: servePrefixes.slack };
    }
  }
}

/** LINE, with the queue its events are recorded in before their 200; handled from the record. */
async function startLine(rt: Runtime, chat: ChatService, app: FastifyInstance): Promise<Started> {
  const { createLineWebhook } = await import('@codefleet/line');
  const { config } = rt;
  const inbox = await rt.openQueue(sideQueueSettings(queueSettingsFromConfig(config), lineInboxSuffix));
  try {
    const webhook = createLineWebhook({
      config: config.line,
      chat,
      store: rt.store,
      inbox,
      log: rt.log,
      secrets: rt.secrets,
    });
    const own = ownPort(rt, config.line.port) !== undefined;
    if (own) await webhook.listen();
    else await app.register(webhook.routes, { prefix: servePrefixes.line });
    const close = async () => {
      try {
        await webhook.close();
      } finally {
        await inbox.close();
      }
    };
    return own
      ? { name: 'line', where: `LINE webhook on ${webhook.url}`, port: portOf(webhook.url), close }
      : { name: 'line', where: 'LINE webhook at /line on the serve port', prefix: servePrefixes.line, close };
  } catch (error) {
    await inbox.close();
    throw error;
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
