import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { CodefleetError } from '@codefleet/core';
import type { FastifyInstance } from 'fastify';
import {
  createDeliveryProcessor,
  createPoller,
  GithubForge,
  githubWebhookRoutes,
  startWebhookServer,
  type GithubChecks,
  type GithubIssues,
  type TriggerDeps,
} from '@codefleet/github';
import { queueSettingsFromConfig, type QueueSettings } from '@codefleet/queue';
import { sideQueueSettings } from './side-queue.js';
import { requireFleetKey, type Runtime } from '../runtime.js';

async function triggerDeps(rt: Runtime): Promise<TriggerDeps & { issues: GithubIssues; checks: GithubChecks }> {
  requireFleetKey(rt);
  const forge = await rt.forge();
  if (!(forge instanceof GithubForge)) {
    throw new CodefleetError(
      'invalid_config',
      'the producer turns GitHub issues into jobs: set forge.type to github (and the token variable)',
    );
  }
  const ci = rt.config.forge.github.ci_feedback;
  return {
    issues: forge.issues,
    queue: rt.queue,
    log: rt.log,
    requester: await rt.requester(),
    cancels: rt.store,
    runs: rt.store,
    checks: forge.checks,
    ciFeedback: {
      enabled: ci.enabled,
      maxRounds: ci.max_rounds,
      logBytes: ci.log_bytes,
      settleMs: ci.settle_seconds * 1_000,
    },
  };
}

/** Where the webhook records deliveries: `<queue.name>-deliveries` ({@link sideQueueSettings}). */
export function deliveryQueueSettings(settings: QueueSettings): QueueSettings {
  return sideQueueSettings(settings, 'deliveries');
}

/** Aborts when SIGTERM or SIGINT arrives; `dispose` takes the handlers off again. */
export function untilSignal(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
    },
  };
}

/** The webhook's port when it has one of its own and neither `--port` nor `forge.github.webhook_port` names one. */
export const defaultWebhookPort = 8787;
/** Where `codefleet serve` takes GitHub deliveries on its one port. */
export const webhookPrefix = '/webhook';

/**
 * Starts the GitHub webhook receiver and the processor that acts on its recorded
 * deliveries: on a port of its own, or, with `into`, as routes under {@link webhookPrefix}
 * of a server the caller listens with and closes first. `close` stops receiving first; a
 * delivery being acted on finishes; what is left stays recorded for next time.
 */
export async function startGithubWebhook(
  rt: Runtime,
  options: { port?: number; into?: FastifyInstance },
): Promise<{ where: string; port?: number; close(): Promise<void> }> {
  const deps = await triggerDeps(rt);
  const { github } = rt.config.forge;
  if (github.webhook_secret === undefined) {
    throw new CodefleetError(
      'invalid_config',
      `$${github.webhook_secret_env} is not set: export the webhook secret configured on GitHub`,
    );
  }
  const deliveries = await rt.openQueue(deliveryQueueSettings(queueSettingsFromConfig(rt.config)));
  try {
    const routeOptions = {
      secret: github.webhook_secret,
      triggerLabel: github.trigger_label,
      deliveries,
      repos: github.repos,
    };
    const server =
      options.into === undefined
        ? await startWebhookServer(deps, {
            ...routeOptions,
            port: options.port ?? github.webhook_port ?? defaultWebhookPort,
            host: github.webhook_host,
          })
        : undefined;
    if (options.into !== undefined)
      await options.into.register(githubWebhookRoutes(deps, routeOptions), { prefix: webhookPrefix });
    const processing = new AbortController();
    const processor = createDeliveryProcessor(deps, { deliveries }).run(processing.signal);
    const scope = github.repos.length === 0 ? 'any repository' : github.repos.join(', ');
    const at =
      server === undefined
        ? `at ${webhookPrefix} on the serve port`
        : `on http://${github.webhook_host}:${server.port}/webhook`;
    return {
      where: `GitHub webhooks ${at} (trigger label "${github.trigger_label}", ${scope})`,
      port: server?.port,
      close: async () => {
        try {
          await server?.close();
          processing.abort();
          await processor;
        } finally {
          await deliveries.close();
        }
      },
    };
  } catch (error) {
    await deliveries.close();
    throw error;
  }
}

/**
 * `codefleet producer webhook`: receives GitHub webhooks and acts on the recorded
 * deliveries until SIGTERM/SIGINT (or `options.signal`, for tests).
 */
export async function webhook(
  rt: Runtime,
  options: { port?: number; signal?: AbortSignal },
  out: (line: string) => void,
): Promise<void> {
  const stop = options.signal ? { signal: options.signal, dispose: () => undefined } : untilSignal();
  try {
    const hook = await startGithubWebhook(rt, options);
    out(`listening for ${hook.where}`);
    await new Promise<void>((resolve) => {
      if (stop.signal.aborted) resolve();
      stop.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    await hook.close();
  } finally {
    stop.dispose();
  }
}

/** `codefleet producer poll`: polls the configured repositories, once or until SIGTERM/SIGINT. */
export async function poll(rt: Runtime, options: { once?: boolean }, out: (line: string) => void): Promise<void> {
  const deps = await triggerDeps(rt);
  const { github } = rt.config.forge;
  if (github.repos.length === 0)
    throw new CodefleetError('invalid_config', 'forge.github.repos is empty: list the owner/name repositories to poll');
  const poller = createPoller(deps, {
    repos: github.repos,
    triggerLabel: github.trigger_label,
    cursorPath: join(rt.config.data_dir, 'poll-cursor.json'),
  });
  const stop = untilSignal();
  try {
    do {
      try {
        for (const outcome of await poller.pollOnce()) out(JSON.stringify(outcome));
      } catch (error) {
        // A failed poll (GitHub down, rate limited) is retried at the next interval.
        rt.log.warn({ err: error, event: 'poll.failed' }, 'poll failed; trying again at the next interval');
        if (options.once) throw error;
      }
      if (options.once) return;
      await sleep(github.poll_interval_seconds * 1_000, undefined, { signal: stop.signal }).catch(() => undefined);
    } while (!stop.signal.aborted);
  } finally {
    stop.dispose();
  }
}
