import * as z from 'zod';
import { envVarName } from './common.js';

/** Log levels, most severe first; `silent` turns logging off. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** `logging:` — level, output format and extra values to mask. */
export const loggingSchema = z
  .strictObject({
    level: z.enum(LOG_LEVELS).default('info').describe('Minimum level written.'),
    format: z
      .enum(['auto', 'json', 'pretty'])
      .default('auto')
      .describe(
        'auto: pretty when the logs go to a terminal, else json; json: one JSON object per line; pretty: for a terminal.',
      ),
    redact_values: z
      .array(envVarName)
      .default(() => [])
      .describe(
        'Extra environment variable NAMES whose values are masked in logs (API keys and tokens are masked already).',
      ),
  })
  .prefault({})
  .describe('Logging.');
