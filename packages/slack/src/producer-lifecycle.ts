import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Inbox } from '@codefleet/chat';
import type { SlackConfig } from '@codefleet/config';
import type { Logger } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import type { App, HTTPReceiver } from '@slack/bolt';
import type { SlackReceiver } from './producer-receiver.js';

/** What starting and stopping the producer share; `processing` and `mounted` change as it runs. */
export interface ProducerRun {
  config: SlackConfig;
  log: Logger;
  app: App;
  receiver: SlackReceiver;
  inbox: Inbox;
  /** The inbox processor, while the producer is started (start after stop runs it again). */
  processing: { controller: AbortController; running: Promise<void> } | undefined;
  /** Mounted in another server: Bolt's receiver has no server of its own to stop. */
  mounted: boolean;
}

/** Where `start` may hand the HTTP request handler instead of listening on a port of its own. */
export interface StartOptions {
  mount?: (handler: (req: IncomingMessage, res: ServerResponse) => void) => void;
}

/** Runs the inbox processor, then connects (Socket Mode), mounts or listens (HTTP). */
export async function startProducer(run: ProducerRun, options: StartOptions): Promise<{ eventsUrl?: string }> {
  const { config, log, app, receiver } = run;
  if (run.processing === undefined) {
    const controller = new AbortController();
    run.processing = { controller, running: run.inbox.run(controller.signal) };
  }
  if (receiver.mode === 'socket') {
    await app.start();
    log.info({ event: 'slack.started', mode: 'socket' }, 'Slack producer connected');
    return {};
  }
  if (options.mount !== undefined) {
    // The receiver routes by path (/slack/events) and checks signatures itself.
    const http = receiver.receiver;
    options.mount((req, res) => http.requestListener(req, res));
    run.mounted = true;
    log.info({ event: 'slack.started', mode: 'http', mounted: true }, 'Slack producer mounted');
    return {};
  }
  const server = (await (app.start as unknown as HTTPReceiver['start'])({
    port: config.port ?? 0,
    host: config.host,
  })) as { address(): AddressInfo | string | null };
  const address = server.address() as AddressInfo;
  const eventsUrl = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${address.port}/slack/events`;
  log.info({ event: 'slack.started', mode: 'http', url: eventsUrl }, 'Slack producer listening');
  return { eventsUrl };
}

/** Disconnects or stops listening, then stops the inbox processor. */
export async function stopProducer(run: ProducerRun): Promise<void> {
  try {
    if (run.receiver.mode === 'socket') await run.receiver.receiver.client.disconnect();
    else if (!run.mounted) await run.app.stop();
  } finally {
    // What is being handled finishes; what waits stays recorded for the next start.
    const stopping = run.processing;
    run.processing = undefined;
    stopping?.controller.abort();
    await stopping?.running;
  }
}

/** Resolves once no record waits or is being handled (one waiting for a retry is not waited for). */
export async function inboxIdle(inbox: Pick<Queue, 'stats'>): Promise<void> {
  for (;;) {
    const stats = await inbox.stats();
    if (stats.ready + stats.inFlight === 0) return;
    await sleep(20);
  }
}
