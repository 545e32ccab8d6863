import type { Config } from '@codefleet/config';

/**
 * Everything needed to open a queue, as plain JSON, so a second process (a worker, the
 * conformance suite's claimer processes) can open the same queue from it.
 */
export type QueueSettings = LocalQueueSettings | BullmqQueueSettings;

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

/** BullMQ on Redis, for fleets. */
export interface BullmqQueueSettings {
  backend: 'bullmq';
  /** `redis://` or `rediss://` URL; a password in it is masked in logs. */
  url: string;
  /** Prefix of every BullMQ key. */
  prefix: string;
  /** Queue name; no `:`. */
  name: string;
  /** BullMQ lock duration: how long a claim holds a job without a heartbeat. */
  leaseMs: number;
  maxAttempts: number;
  /** How often a waiting `claim` looks for a job; default 200 ms. */
  pollMs?: number;
  /** How often expired locks are looked for; default half the lease. */
  stalledCheckMs?: number;
  /** How long a producer call waits for Redis before failing with `queue_unavailable`; default 5 000 ms. */
  connectTimeoutMs?: number;
}

/** Derives queue settings from the loaded configuration. */
export function queueSettingsFromConfig(config: Config): QueueSettings {
  const { queue, worker } = config;
  const base = { name: queue.name, leaseMs: queue.lease_seconds * 1000, maxAttempts: worker.max_retries + 1 };
  switch (queue.backend) {
    case 'local':
      return { backend: 'local', path: queue.local.path, ...base };
    case 'bullmq':
      return { backend: 'bullmq', url: queue.bullmq.url, prefix: queue.bullmq.prefix, ...base, leaseMs: queue.bullmq.lock_duration_ms };
    default:
      // TODO(fleet engines issue): the sqs adapter lands next, with its emulator tests.
      throw new Error(`queue.backend: "${queue.backend}" is not available in this build yet; use "local" or "bullmq"`);
  }
}
