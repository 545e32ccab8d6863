import * as z from 'zod';

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
  })
  .prefault({})
  .describe('Run records and task leases (fencing of publishing).');
