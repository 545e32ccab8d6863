import * as z from 'zod';
import { seconds } from './common.js';

const local = z
  .strictObject({
    path: z.string().min(1).optional().describe('SQLite file of the embedded queue. Default: <data_dir>/queue.sqlite.'),
  })
  .prefault({})
  .describe('Embedded single-host queue (backend: local); needs no server.');

const bullmq = z
  .strictObject({
    url: z.string().min(1).default('redis://127.0.0.1:6379').describe('Redis connection URL (redis:// or rediss://).'),
    prefix: z.string().min(1).default('codefleet').describe('Key prefix for every BullMQ key in Redis.'),
    lock_duration_ms: z
      .number()
      .int()
      .positive()
      .default(120_000)
      .describe(
        'BullMQ lock duration in milliseconds; a job whose lock expires is considered stalled and redelivered.',
      ),
  })
  .prefault({})
  .describe('Fleet queue on Redis (backend: bullmq).');

const sqs = z
  .strictObject({
    queue_url: z.url().optional().describe('URL of the SQS queue. Required when queue.backend is sqs.'),
    region: z
      .string()
      .min(1)
      .optional()
      .describe('AWS region. Default: $AWS_REGION, then $AWS_DEFAULT_REGION, then us-east-1.'),
    endpoint: z.url().optional().describe('Custom SQS endpoint, for emulators such as ElasticMQ or LocalStack.'),
    wait_time_seconds: seconds(0)
      .max(20)
      .default(20)
      .describe('Long-polling wait per receive call, 0-20 seconds: an idle worker waits at SQS instead of polling.'),
    visibility_timeout: seconds(0)
      .max(43_200)
      .default(3600)
      .describe('Visibility timeout of a received message, 0-43200 seconds; heartbeats extend it while a job runs.'),
    dead_letter_queue_url: z.url().optional().describe('URL of the dead-letter queue, for listing and redrive.'),
    priority_queue_url: z
      .url()
      .optional()
      .describe(
        'URL of a second queue for high-priority jobs, polled before the main one (SQS has no priority; without it, priority is not honoured). Same type (standard or FIFO) and redrive policy as the main queue.',
      ),
    max_receive_count: z
      .number()
      .int()
      .min(1)
      .default(4)
      .describe(
        'Receives before SQS moves a message to the dead-letter queue; 4 = the first run plus worker.max_retries (3).',
      ),
    fifo: z.boolean().default(false).describe('The queue is a FIFO queue (its URL ends in .fifo).'),
    coordination_url: z
      .string()
      .min(1)
      .default('redis://127.0.0.1:6379')
      .describe(
        'Redis URL of the coordination store an SQS fleet shares: idempotency keys, lease tokens that fence stale workers, attempts and dead letters.',
      ),
  })
  .prefault({})
  .describe('Cloud queue on AWS SQS (backend: sqs).');

/** `queue:` — where jobs wait and how long a claimed job is held. */
export const queueSchema = z
  .strictObject({
    backend: z
      .enum(['local', 'bullmq', 'sqs'])
      .default('local')
      .describe('Queue engine: local (embedded SQLite, one host), bullmq (Redis, a fleet) or sqs (AWS).'),
    name: z.string().min(1).default('codefleet').describe('Queue name.'),
    lease_seconds: seconds(1)
      .default(120)
      .describe('How long a claimed job is held before it is redelivered, unless heartbeats extend the lease.'),
    heartbeat_seconds: z
      .number()
      .positive()
      .optional()
      .describe(
        'Interval of lease-extending heartbeats while a job runs; must be below lease_seconds. Default: lease_seconds / 4.',
      ),
    per_repo_concurrency: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        'Most jobs of one repository that run at once across the fleet; a job over it waits in the queue without spending an attempt. Unset: no limit.',
      ),
    per_requester_share: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .describe(
        "Share of a repository's slots one requester may hold: at most max(1, floor(per_repo_concurrency × share)) of their jobs on one repository run at once. Needs per_repo_concurrency. Unset: no such limit.",
      ),
    priority_aging_seconds: seconds(1)
      .default(300)
      .describe(
        'A waiting job rises one priority level (low → normal → high) per this many seconds waited, so a steady stream of high-priority jobs never starves it.',
      ),
    local,
    bullmq,
    sqs,
  })
  .prefault({})
  .describe('Job queue.');
