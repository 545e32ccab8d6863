import * as z from 'zod';
import { envVarName } from './common.js';

const github = z
  .strictObject({
    api_url: z
      .url()
      .default('https://api.github.com')
      .describe('REST API base URL; change it for GitHub Enterprise Server.'),
    token_env: envVarName
      .default('GITHUB_TOKEN')
      .describe('Name of the environment variable holding the GitHub token. Tokens are never config values.'),
    trigger_label: z.string().min(1).default('codefleet').describe('Issue label that turns an issue into a job.'),
    labels: z
      .strictObject({
        queued: z.string().min(1).default('codefleet:queued').describe('Added when the job is queued.'),
        running: z.string().min(1).default('codefleet:running').describe('Replaces queued when a worker starts it.'),
        pr_opened: z
          .string()
          .min(1)
          .default('codefleet:pr-opened')
          .describe('Replaces running when the pull request is open.'),
        failed: z
          .string()
          .min(1)
          .default('codefleet:failed')
          .describe('Replaces running when the job failed for good.'),
      })
      .prefault({})
      .describe("Labels that show a job's progress on its issue."),
    webhook_secret_env: envVarName
      .default('GITHUB_WEBHOOK_SECRET')
      .describe('Name of the environment variable holding the webhook secret (`codefleet producer webhook`).'),
    webhook_port: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .optional()
      .describe(
        'A port of its own for the webhook receiver (`codefleet producer webhook` alone: default 8787); unset: served on serve.port under /webhook.',
      ),
    webhook_host: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe('Address the webhook receiver binds to; put a TLS proxy in front of it.'),
    repos: z
      .array(z.string().regex(/^[A-Za-z0-9-]+\/[A-Za-z0-9._-]+$/, { error: 'expected owner/name' }))
      .default([])
      .describe(
        'Repositories codefleet acts on: `codefleet producer poll` polls them, and `codefleet producer webhook` acts only on their deliveries (empty: on any repository that sends a signed delivery).',
      ),
    ci_feedback: z
      .strictObject({
        enabled: z
          .boolean()
          .default(true)
          .describe("Feed failing checks on codefleet's pull requests back to a follow-up job on the same branch."),
        max_rounds: z
          .number()
          .int()
          .min(0)
          .max(20)
          .default(2)
          .describe(
            'Follow-up jobs per pull request for failing CI; the next failure is refused, and said so on the pull request.',
          ),
        log_bytes: z
          .number()
          .int()
          .min(512)
          .max(32_768)
          .default(4096)
          .describe("Bytes of each failing job's log given to the agent, trimmed as verification feedback is."),
        settle_seconds: z
          .number()
          .int()
          .min(0)
          .max(24 * 3600)
          .default(1800)
          .describe(
            "How long a round waits, from the first failure on a commit, for the commit's other checks to finish, so every failing check reaches the agent; past it the round starts with what has failed so far.",
          ),
      })
      .prefault({})
      .describe(
        "CI failures fed back: when checks fail on a pull request codefleet opened (webhook check_run, check_suite and status events, or polling), a follow-up job gets the failing job's log. Never for forks, nor once someone else pushed to the branch; a green run ends the loop.",
      ),
    poll_interval_seconds: z.number().min(5).default(60).describe('Seconds between polls.'),
    app_id: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('GitHub App id, to authenticate as an App instead of with a token.'),
    private_key_env: envVarName
      .optional()
      .describe('Name of the environment variable holding the GitHub App private key (PEM).'),
    installation_id: z.number().int().min(1).optional().describe('GitHub App installation id; required with app_id.'),
  })
  .prefault({})
  .describe('GitHub forge.');

/** `forge:` — where repositories live and pull requests are opened. */
export const forgeSchema = z
  .strictObject({
    type: z
      .enum(['local', 'github'])
      .default('local')
      .describe(
        'local: local paths or git URLs, results kept as branches; github: issues and pull requests on GitHub.',
      ),
    github,
  })
  .prefault({})
  .describe('Code forge.');
