import type { Config } from '@codefleet/config';
import type { ConcurrencyLimits } from './concurrency.js';

/**
 * Everything needed to open a queue, as plain JSON, so a second process (a worker, the
 * conformance suite's claimer processes) can open the same queue from it.
 */
export type QueueSettings = LocalQueueSettings | BullmqQueueSettings | SqsQueueSettings;

/** How every backend orders and limits claims; see `concurrency.ts`. */
export interface SchedulingSettings {
  /** Concurrency groups (per repository, per requester's share); absent: no limit. */
  limits?: ConcurrencyLimits;
  /** A waiting job rises one priority level per this many ms waited; default 5 minutes. */
  agingMs?: number;
}

/** The embedded SQLite queue. */
export interface LocalQueueSettings extends SchedulingSettings {
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
export interface BullmqQueueSettings extends SchedulingSettings {
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

/** AWS SQS, for the cloud, with a Redis for what SQS cannot keep (dedup, lease tokens, dead letters). */
export interface SqsQueueSettings extends SchedulingSettings {
  backend: 'sqs';
  queueUrl: string;
  region: string;
  /** An emulator's endpoint; absent for AWS itself. */
  endpoint?: string;
  /**
   * Only for emulators, which take any key. Real deployments leave it out: the AWS SDK's
   * own provider chain (environment, profile, instance role) supplies credentials.
   */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Redis URL of the coordination store. */
  coordinationUrl: string;
  /**
   * The dead-letter queue the main queue's redrive policy feeds (set up with the queue,
   * e.g. maxReceiveCount = worker.max_retries + 2). Listed and redriven with the worker's
   * own dead letters; unset, only those are.
   */
  deadLetterQueueUrl?: string;
  /**
   * A second queue for high-priority jobs (SQS has no priority): polled first, briefly,
   * before each long poll of the main one. Unset, every job shares the main queue and
   * priority is not honoured. Low and normal jobs both go to the main queue.
   */
  priorityQueueUrl?: string;
  /** Key prefix in the coordination store. */
  prefix: string;
  name: string;
  /** The visibility timeout of a claim, in whole seconds. */
  leaseMs: number;
  maxAttempts: number;
  /** Long-polling wait per receive, 0-20 s; default 20. */
  waitTimeSeconds?: number;
  /** Sleep between receives when less than a second of waiting is left; default 200 ms. */
  pollMs?: number;
  fifo?: boolean;
}

/** Derives queue settings from the loaded configuration. */
export function queueSettingsFromConfig(config: Config): QueueSettings {
  const { queue, worker } = config;
  const base = {
    name: queue.name,
    leaseMs: queue.lease_seconds * 1000,
    maxAttempts: worker.max_retries + 1,
    agingMs: queue.priority_aging_seconds * 1000,
    ...(queue.per_repo_concurrency === undefined
      ? {}
      : {
          limits: {
            perRepo: queue.per_repo_concurrency,
            ...(queue.per_requester_share === undefined ? {} : { perRequesterShare: queue.per_requester_share }),
          },
        }),
  };
  switch (queue.backend) {
    case 'local':
      return { backend: 'local', path: queue.local.path, ...base };
    case 'bullmq':
      return {
        backend: 'bullmq',
        url: queue.bullmq.url,
        prefix: queue.bullmq.prefix,
        ...base,
        leaseMs: queue.bullmq.lock_duration_ms,
      };
    case 'sqs': {
      const { sqs } = queue;
      if (sqs.queue_url === undefined) throw new Error('queue.sqs.queue_url: required when queue.backend is "sqs"');
      return {
        backend: 'sqs',
        queueUrl: sqs.queue_url,
        region: sqs.region ?? 'us-east-1',
        coordinationUrl: sqs.coordination_url,
        prefix: queue.bullmq.prefix,
        ...base,
        leaseMs: sqs.visibility_timeout * 1000,
        waitTimeSeconds: sqs.wait_time_seconds,
        fifo: sqs.fifo,
        ...(sqs.endpoint === undefined ? {} : { endpoint: sqs.endpoint }),
        ...(sqs.dead_letter_queue_url === undefined ? {} : { deadLetterQueueUrl: sqs.dead_letter_queue_url }),
        ...(sqs.priority_queue_url === undefined ? {} : { priorityQueueUrl: sqs.priority_queue_url }),
      };
    }
  }
}
