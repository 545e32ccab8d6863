import * as z from 'zod';
import { seconds } from './common.js';

const backoff = z
  .strictObject({
    strategy: z
      .enum(['fixed', 'exponential'])
      .default('fixed')
      .describe(
        'fixed: always delay_seconds; exponential: delay_seconds * 2^(attempt-1), capped at max_delay_seconds.',
      ),
    delay_seconds: z.number().min(0).default(10).describe('Delay before an outer retry, in seconds.'),
    max_delay_seconds: z.number().min(0).default(300).describe('Upper bound for exponential delays.'),
    jitter: z.boolean().default(true).describe('Randomize delays a little so a fleet does not retry in lockstep.'),
  })
  .prefault({})
  .describe('Delay between outer retries of transient failures.');

/** `worker:` — identity, parallelism and retry budget of one worker process. */
export const workerSchema = z
  .strictObject({
    worker_id: z
      .string()
      .min(1)
      .optional()
      .describe('Identifier of this worker in logs, leases and PR notes. Default: the host name.'),
    concurrency: z.number().int().min(1).default(1).describe('Jobs this process runs at the same time.'),
    max_retries: z
      .number()
      .int()
      .min(0)
      .default(3)
      .describe('Outer retries of a job after transient failures (agent timeout, network, forge 5xx).'),
    max_fix_attempts: z
      .number()
      .int()
      .min(1)
      .default(3)
      .describe('Inner attempts per pass in which the agent gets build/test errors fed back.'),
    backoff,
    job_budget_seconds: seconds(1)
      .optional()
      .describe(
        'Wall-clock budget of one job across all its attempts; past it the agent is stopped and the job fails with budget_exceeded. Unset: no budget beyond the timeouts.',
      ),
    shutdown_grace_seconds: seconds(0)
      .default(30)
      .describe('After SIGTERM, how long running jobs may finish before they are abandoned to redelivery.'),
    metrics_port: z
      .number()
      .int()
      .min(1)
      .max(65_535)
      .optional()
      .describe('Port of the health (/healthz) and Prometheus metrics (/metrics) HTTP endpoint; disabled when unset.'),
    metrics_host: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe('Address the health and metrics endpoint binds to; 0.0.0.0 to let a scraper on another host reach it.'),
  })
  .prefault({})
  .describe('Worker process.');
