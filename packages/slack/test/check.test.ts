import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startSlackStandIn, type SlackStandIn } from '@codefleet/testkit';
import { checkSlack } from '../src/index.js';
import { slackConfig } from './support/harness.js';

let slack: SlackStandIn;
beforeAll(async () => {
  slack = await startSlackStandIn();
});
afterAll(async () => {
  await slack?.close();
});

describe('checkSlack (for codefleet doctor)', () => {
  it('passes with working tokens and names the bot', async () => {
    expect(await checkSlack(slackConfig(slack, 'socket'))).toEqual({
      ok: true,
      problems: [],
      team: 'Stand-in',
      botUserId: slack.botUserId,
    });
    expect((await checkSlack(slackConfig(slack, 'http'))).ok).toBe(true);
  });

  it('names each refused or missing secret by its variable, never by its value', async () => {
    const swapped = { ...slackConfig(slack, 'socket'), bot_token: 'xoxb-revoked-0000', app_token: slack.botToken };
    const check = await checkSlack(swapped);
    expect(check.ok).toBe(false);
    expect(check.problems).toEqual([
      expect.stringMatching(/SLACK_BOT_TOKEN.*invalid_auth/),
      expect.stringMatching(/SLACK_APP_TOKEN.*not_allowed_token_type/),
    ]);
    expect(check.problems.join('\n')).not.toContain('xoxb-');
    const { signing_secret: _unused, ...unsigned } = slackConfig(slack, 'http');
    expect((await checkSlack(unsigned)).problems).toEqual([expect.stringContaining('SLACK_SIGNING_SECRET')]);
  });
});
