import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { LocalQueue } from './local/local-queue.js';
import type { Queue } from './port.js';
import type { QueueSettings } from './settings.js';

/** Opens the queue the settings describe. */
export async function openQueue(settings: QueueSettings): Promise<Queue> {
  switch (settings.backend) {
    case 'local':
      mkdirSync(dirname(settings.path), { recursive: true });
      return new LocalQueue(settings);
    case 'bullmq': {
      // Loaded only when used, so a single-host install never touches Redis code.
      const { BullmqQueue } = await import('./bullmq/bullmq-queue.js');
      return new BullmqQueue(settings);
    }
    case 'sqs': {
      const { SqsQueue } = await import('./sqs/sqs-queue.js');
      return new SqsQueue(settings);
    }
  }
}
