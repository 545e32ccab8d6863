import { createHmac, randomUUID } from 'node:crypto';

/**
 * Slack's payload shapes and the request signing of the Slack STAND-IN: Events API
 * `event_callback` bodies, `block_actions` interactions, and the v0 signature Slack puts on
 * every HTTP delivery (`X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:<timestamp>:<body>">`).
 */

/** `v0=` + HMAC-SHA256 of `v0:<timestamp>:<raw body>` under the signing secret. */
export function signSlackRequest(signingSecret: string, timestamp: number, rawBody: string): string {
  return `v0=${createHmac('sha256', signingSecret).update(`v0:${timestamp}:${rawBody}`).digest('hex')}`;
}

/** Wraps an event as Slack delivers it (Events API over HTTP and inside Socket Mode envelopes). */
export function eventCallback(
  event: Record<string, unknown>,
  ids: { teamId: string; appId: string; botUserId: string },
): Record<string, unknown> {
  return {
    token: 'legacy-verification-token',
    team_id: ids.teamId,
    api_app_id: ids.appId,
    event,
    type: 'event_callback',
    event_id: `Ev${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [
      { enterprise_id: null, team_id: ids.teamId, user_id: ids.botUserId, is_bot: true, is_enterprise_install: false },
    ],
    is_ext_shared_channel: false,
    event_context: `4-${randomUUID()}`,
  };
}

/** A `block_actions` payload: `user` clicked the button `actionId` (carrying `value`) on a message. */
export function blockActions(input: {
  channel: string;
  messageTs: string;
  user: string;
  actionId: string;
  value: string;
  blockId?: string;
  message?: Record<string, unknown>;
  ids: { teamId: string; appId: string };
}): Record<string, unknown> {
  return {
    type: 'block_actions',
    user: {
      id: input.user,
      username: input.user.toLowerCase(),
      name: input.user.toLowerCase(),
      team_id: input.ids.teamId,
    },
    api_app_id: input.ids.appId,
    token: 'legacy-verification-token',
    container: { type: 'message', message_ts: input.messageTs, channel_id: input.channel, is_ephemeral: false },
    trigger_id: `${Date.now()}.${randomUUID().slice(0, 8)}`,
    team: { id: input.ids.teamId, domain: 'standin' },
    channel: { id: input.channel, name: input.channel.toLowerCase() },
    message: input.message ?? { type: 'message', ts: input.messageTs },
    response_url: 'https://hooks.slack.example/actions/standin',
    actions: [
      {
        action_id: input.actionId,
        block_id: input.blockId ?? 'blk',
        text: { type: 'plain_text', text: input.value },
        value: input.value,
        type: 'button',
        action_ts: `${Date.now() / 1000}`,
      },
    ],
  };
}
