import * as z from 'zod';

const retention = z
  .strictObject({
    max_age_days: z
      .number()
      .min(0)
      .default(90)
      .describe(
        'Runs created, journal entries written and queue jobs finished (completed or dead-lettered) more than this many days ago are deleted; a run still active never is. 0: no age limit.',
      ),
    max_runs: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        'Keep at most this many runs, the newest (an active run always stays), and as many completed queue jobs. Dead letters go by age only. Unset: no count limit.',
      ),
    interval_minutes: z
      .number()
      .min(1)
      .default(60)
      .describe(
        'How often every worker and `serve` trim, in the background, a short batch at a time; also once a minute after they start. Expired request keys go then too.',
      ),
  })
  .prefault({})
  .describe('Retention: what the run store and the queue keep of finished work.');

/** `store:` — where run records and task leases live. */
export const storeSchema = z
  .strictObject({
    backend: z
      .enum(['sqlite', 'redis'])
      .default('sqlite')
      .describe(
        'sqlite: <data_dir>/runs.sqlite, for one host; redis: shared by a fleet, so every worker and `codefleet runs` on any host see the same runs and leases.',
      ),
    redis_url: z
      .string()
      .min(1)
      .default('redis://127.0.0.1:6379')
      .describe('Redis URL of the fleet store (backend: redis). An SQS fleet can point it at its coordination Redis.'),
    prefix: z.string().min(1).default('codefleet').describe('Key prefix in Redis.'),
    retention,
  })
  .prefault({})
  .describe('Run records and task leases (fencing of publishing).');
