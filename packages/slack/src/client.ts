import type { SlackConfig } from '@codefleet/config';
import { CodefleetError } from '@codefleet/core';
import { WebClient, type WebClientOptions } from '@slack/web-api';
import { slackClientOptions } from './outbound.js';

/**
 * The Web API client of the requester (and of anything else that writes to Slack outside
 * the producer's Bolt app): the bot token, `slack.api_url`, and Slack's outbound policy
 * (a request timeout and few retries, see outbound.ts): reporting is best effort and must
 * not hold a worker for the SDK's default half hour of retries. `options` are for tests.
 */
export function createSlackClient(
  config: Pick<SlackConfig, 'bot_token' | 'api_url'>,
  options: WebClientOptions = {},
): WebClient {
  if (config.bot_token === undefined || config.bot_token === '') {
    throw new CodefleetError(
      'invalid_config',
      'slack: the bot token is not set (slack.bot_token_env names the variable)',
      { verdict: 'permanent' },
    );
  }
  return new WebClient(config.bot_token, {
    slackApiUrl: config.api_url,
    ...slackClientOptions(),
    ...options,
  });
}
