import * as z from 'zod';
import { envVarName } from './common.js';

const github = z
  .strictObject({
    api_url: z.url().default('https://api.github.com').describe('REST API base URL; change it for GitHub Enterprise Server.'),
    token_env: envVarName
      .default('GITHUB_TOKEN')
      .describe('Name of the environment variable holding the GitHub token. Tokens are never config values.'),
    trigger_label: z.string().min(1).default('codefleet').describe('Issue label that turns an issue into a job.'),
    app_id: z.number().int().min(1).optional().describe('GitHub App id, to authenticate as an App instead of with a token.'),
    private_key_env: envVarName.optional().describe('Name of the environment variable holding the GitHub App private key (PEM).'),
    installation_id: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('GitHub App installation id; looked up per repository when unset.'),
  })
  .prefault({})
  .describe('GitHub forge.');

/** `forge:` — where repositories live and pull requests are opened. */
export const forgeSchema = z
  .strictObject({
    type: z
      .enum(['local', 'github'])
      .default('local')
      .describe('local: local paths or git URLs, results kept as branches; github: issues and pull requests on GitHub.'),
    github,
  })
  .prefault({})
  .describe('Code forge.');
