import type { Config } from '@codefleet/config';

/**
 * Everything needed to open a queue, as plain JSON, so a second process (a worker, the
 * conformance suite's claimer processes) can open the same queue from it.
 */
export type QueueSettings = LocalQueueSettings;

/** The embedded SQLite queue. */
export interface LocalQueueSettings {
  backend: 'local';
  /** Path of the SQLite database file. */
  path: string;
  /** Several named queues can share one file. */
  name: string;
  leaseMs: number;
  /** Deliveries before a job is dead-lettered: 1 + worker.max_retries. */
  maxAttempts: number;
  /** How often a waiting `claim` looks for new rows. */
  pollMs?: number;
}

/** Derives queue settings from the loaded configuration. */
export function queueSettingsFromConfig(config: Config): QueueSettings {
  const { queue, worker } = config;
  const base = { name: queue.name, leaseMs: queue.lease_seconds * 1000, maxAttempts: worker.max_retries + 1 };
  switch (queue.backend) {
    case 'local':
      return { backend: 'local', path: queue.local.path, ...base };
    default:
      // TODO(fleet engines issue): bullmq and sqs adapters land with their own issue.
      throw new Error(`queue.backend: "${queue.backend}" is not available in this build yet; use "local"`);
  }
}
