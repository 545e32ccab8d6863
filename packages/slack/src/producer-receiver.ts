import type { SlackConfig } from '@codefleet/config';
import { CodefleetError } from '@codefleet/core';
import { HTTPReceiver, SocketModeReceiver, type Logger as BoltLogger } from '@slack/bolt';
import type { WebClientOptions } from '@slack/web-api';
import { slackClientOptions } from './outbound.js';

/** The Bolt receiver the producer's app runs on: Socket Mode's, or HTTP's for the Events API. */
export type SlackReceiver = { mode: 'socket'; receiver: SocketModeReceiver } | { mode: 'http'; receiver: HTTPReceiver };

/** A secret the producer cannot start without, named by its environment variable when missing. */
export function requireSecret(value: string | undefined, env: string): string {
  if (value === undefined || value === '')
    throw new CodefleetError('invalid_config', `slack: ${env} is not set`, { verdict: 'permanent' });
  return value;
}

/** Web API client options: Bolt's client gets Slack's outbound policy too (the SDK default is ten retries over half an hour). */
export function boltClientOptions(config: SlackConfig, overrides: WebClientOptions | undefined): WebClientOptions {
  return { slackApiUrl: config.api_url, ...slackClientOptions(), ...overrides };
}

/**
 * The receiver for `slack.mode`. Socket Mode uses our own receiver (a documented Bolt option)
 * for two reasons: its `installerOptions.clientOptions` carry `slack.api_url` to the client
 * that calls apps.connections.open, and `stop()` can wait for the close handshake, which
 * Bolt's `App.stop()` does not (it resolves before the socket is closed).
 */
export function createReceiver(
  config: SlackConfig,
  logger: BoltLogger,
  clientOptions: WebClientOptions | undefined,
): SlackReceiver {
  if (config.mode === 'socket')
    return {
      mode: 'socket',
      receiver: new SocketModeReceiver({
        appToken: requireSecret(config.app_token, config.app_token_env),
        logger,
        installerOptions: { clientOptions: boltClientOptions(config, clientOptions) },
      }),
    };
  return {
    mode: 'http',
    receiver: new HTTPReceiver({
      signingSecret: requireSecret(config.signing_secret, config.signing_secret_env),
      logger,
      processBeforeResponse: false,
    }),
  };
}
