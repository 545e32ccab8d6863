import * as z from 'zod';
import { envVarName } from './common.js';

/** `signing:` — the fleet key every producer signs jobs with and every worker verifies. */
export const signingSchema = z
  .strictObject({
    key_env: envVarName
      .default('CODEFLEET_FLEET_KEY')
      .describe('Variable holding the fleet key (at least 32 characters); when set it wins over key_file.'),
    key_file: z
      .string()
      .min(1)
      .optional()
      .describe(
        'File holding the fleet key. Default: <data_dir>/fleet.key, made by `codefleet init` (or the first start of a local-queue host) with mode 0600. Always hidden from sandboxed runs.',
      ),
    previous_key_env: envVarName
      .default('CODEFLEET_FLEET_KEY_PREVIOUS')
      .describe(
        'Variable holding the key being rotated out: jobs it signed still verify; new jobs are signed with the current key.',
      ),
    previous_key_file: z
      .string()
      .min(1)
      .optional()
      .describe(
        'File holding the key being rotated out (instead of previous_key_env). Always hidden from sandboxed runs.',
      ),
  })
  .prefault({})
  .describe(
    'Job signing: workers run only jobs signed with the fleet key (HMAC-SHA256). Every host of a fleet needs the same key.',
  );
