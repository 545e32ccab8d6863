import type { ChatService } from '@codefleet/chat';
import type { NodeHandler } from '@codefleet/http-server';
import { queueSettingsFromConfig } from '@codefleet/queue';
import type { Runtime } from '../runtime.js';
import { sideQueueSettings } from './side-queue.js';

/** The suffix of the queue kept chat follow-ups wait in: `<queue.name>-chat-followups`. */
export const followUpQueueSuffix = 'chat-followups';
/** The suffix of the queue Slack events are recorded in before their ack: `<queue.name>-slack-inbox`. */
const slackInboxSuffix = 'slack-inbox';

/**
 * Starts the Slack producer: Socket Mode (an outbound WebSocket, no public URL) or HTTP
 * events at `/slack/events`, per `slack.mode`: given to `mount` (serve's one port), or on
 * `slack.host:port` of their own. Each mention, DM or click is
 * recorded in `<queue.name>-slack-inbox` before Slack gets its ack, and handled from there
 * (a restart finds what the last process acknowledged and did not finish). Beside it runs the follow-up
 * processor: a mention in the thread of a job still queued or running is kept in
 * `<queue.name>-chat-followups` and queued as the follow-up once that job ends, its status
 * message edited then. `close` stops taking mentions first, then the processor; what is
 * still waiting stays recorded for the next start.
 */
export async function startSlack(
  rt: Runtime,
  chat: ChatService,
  mount?: (handler: NodeHandler) => void,
): Promise<{ where: string; close(): Promise<void> }> {
  const { createSlackProducer } = await import('@codefleet/slack');
  const { createFollowUpProcessor } = await import('@codefleet/chat');
  const followUps = await rt.openQueue(sideQueueSettings(queueSettingsFromConfig(rt.config), followUpQueueSuffix));
  const inbox = await rt
    .openQueue(sideQueueSettings(queueSettingsFromConfig(rt.config), slackInboxSuffix))
    .catch(async (error: unknown) => {
      await followUps.close();
      throw error;
    });
  try {
    // Each calls the other only once running: the producer hands the processor what to
    // keep, the processor tells the producer what became of it.
    const producer = createSlackProducer({
      config: rt.config.slack,
      chat,
      store: rt.store,
      inbox,
      log: rt.log,
      defer: (message, deferred) => processor.defer(message, deferred),
    });
    const processor = createFollowUpProcessor({
      followUps,
      chat,
      log: rt.log,
      onOutcome: async (message, outcome) => {
        // Another platform's follow-up (a shared queue) is not this producer's to tell.
        if (message.platform === 'slack') await producer.tell(message, outcome);
      },
    });
    const { eventsUrl } = await producer.start(mount === undefined ? {} : { mount });
    const processing = new AbortController();
    const running = processor.run(processing.signal);
    return {
      where:
        rt.config.slack.mode === 'socket'
          ? 'Slack app in Socket Mode'
          : `Slack events ${eventsUrl === undefined ? 'at /slack/events on the serve port' : `on ${eventsUrl}`}`,
      close: async () => {
        try {
          await producer.stop();
        } finally {
          processing.abort();
          await running;
          await followUps.close();
          await inbox.close();
        }
      },
    };
  } catch (error) {
    await followUps.close();
    await inbox.close();
    throw error;
  }
}
