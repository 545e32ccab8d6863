import * as z from 'zod';
import { envVarName } from './common.js';

/** `dashboard:` — the web dashboard (`codefleet dashboard`, or mounted in `serve` / `worker`). */
export const dashboardSchema = z
  .strictObject({
    enabled: z.boolean().default(false).describe('Run the dashboard in `codefleet serve`.'),
    port: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .optional()
      .describe(
        'A port of its own for the dashboard (`codefleet dashboard` alone: default 8790); unset: served on serve.port under /.',
      ),
    host: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe(
        'Address the dashboard binds to. It can cancel and retry work: keep it on loopback, or put a TLS proxy in front of it.',
      ),
    token_env: envVarName
      .default('CODEFLEET_DASHBOARD_TOKEN')
      .describe(
        'Variable holding the token to log in with (or send as a bearer token); when unset, one is generated at start and printed once.',
      ),
    read_only: z
      .boolean()
      .default(false)
      .describe('Show everything but offer and accept no action (cancel, retry, redrive, drop).'),
  })
  .prefault({})
  .describe('Web dashboard over the run store, the queue and the dead-letter queue.');
