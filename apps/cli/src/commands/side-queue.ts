import type { QueueSettings } from '@codefleet/queue';

/**
 * A queue of the producers' own beside the jobs' queue, under `<queue.name>-<suffix>`: the
 * webhook's recorded deliveries, the chat's kept follow-ups. An SQS queue URL carries one
 * kind of message, so with SQS such records go to BullMQ on the coordination Redis.
 * Attempts are not what ends a record (its processor gives up a day after it was recorded;
 * a rate limit or a running job may be waited out many times), hence the high count.
 */
export function sideQueueSettings(settings: QueueSettings, suffix: string): QueueSettings {
  const name = `${settings.name}-${suffix}`;
  const maxAttempts = 1_000;
  switch (settings.backend) {
    case 'local':
    case 'bullmq':
      return { ...settings, name, maxAttempts };
    case 'sqs':
      return {
        backend: 'bullmq',
        url: settings.coordinationUrl,
        prefix: settings.prefix,
        name,
        leaseMs: settings.leaseMs,
        maxAttempts,
      };
  }
}
