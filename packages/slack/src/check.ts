import type { SlackConfig } from '@codefleet/config';
import { slackClientOptions, slackOutbound } from './outbound.js';
import { WebClient, type WebClientOptions } from '@slack/web-api';
import { slackError } from './errors.js';

/** What `codefleet doctor` learns about the Slack app. Problems never quote a secret. */
export interface SlackCheck {
  ok: boolean;
  problems: string[];
  /** From `auth.test`, when the bot token works. */
  team?: string;
  botUserId?: string;
}

/**
 * Checks the secrets and connectivity of the configured Slack app without sending any
 * message: `auth.test` with the bot token, and in Socket Mode `apps.connections.open` with
 * the app token (it hands out a URL and opens nothing until a client connects). In HTTP
 * mode only the signing secret's presence can be checked: Slack signs, we verify.
 */
export async function checkSlack(config: SlackConfig, clientOptions: WebClientOptions = {}): Promise<SlackCheck> {
  const problems: string[] = [];
  const options: WebClientOptions = {
    slackApiUrl: config.api_url,
    // A check reports what it sees now: no retries, Slack's request timeout.
    ...slackClientOptions({ ...slackOutbound, retries: 0 }),
    ...clientOptions,
  };
  const result: SlackCheck = { ok: false, problems };
  if (config.bot_token === undefined || config.bot_token === '')
    problems.push(`the bot token is not set (variable ${config.bot_token_env})`);
  else {
    try {
      const auth = await new WebClient(config.bot_token, options).auth.test();
      if (auth.team !== undefined) result.team = auth.team;
      if (auth.user_id !== undefined) result.botUserId = auth.user_id;
    } catch (error) {
      problems.push(`the bot token (${config.bot_token_env}) was refused: ${slackError('auth.test', error).message}`);
    }
  }
  if (config.mode === 'socket') {
    if (config.app_token === undefined || config.app_token === '')
      problems.push(
        `the app-level token is not set (variable ${config.app_token_env}); Socket Mode needs one with connections:write`,
      );
    else {
      try {
        await new WebClient(config.app_token, options).apps.connections.open({});
      } catch (error) {
        problems.push(
          `the app-level token (${config.app_token_env}) cannot open Socket Mode: ${slackError('apps.connections.open', error).message}`,
        );
      }
    }
  } else if (config.signing_secret === undefined || config.signing_secret === '') {
    problems.push(
      `the signing secret is not set (variable ${config.signing_secret_env}); HTTP events cannot be verified`,
    );
  }
  result.ok = problems.length === 0;
  return result;
}
