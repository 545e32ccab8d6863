import type { ChatService } from '@codefleet/chat';
import type { Runtime } from '../runtime.js';

/**
 * Starts the Slack producer: Socket Mode (an outbound WebSocket, no public URL) or HTTP
 * events on `slack.host:port/slack/events`, per `slack.mode`.
 */
export async function startSlack(rt: Runtime, chat: ChatService): Promise<{ where: string; close(): Promise<void> }> {
  const { createSlackProducer } = await import('@codefleet/slack');
  const producer = createSlackProducer({ config: rt.config.slack, chat, store: rt.store, log: rt.log });
  const { eventsUrl } = await producer.start();
  return {
    where: eventsUrl === undefined ? 'Slack app in Socket Mode' : `Slack events on ${eventsUrl}`,
    close: () => producer.stop(),
  };
}
