import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { startLineStandIn, startSlackStandIn, type LineStandIn } from '@codefleet/testkit';
import { producerChecks } from '../src/commands/producer-checks.js';

// `codefleet doctor`'s checks of the enabled chat and HTTP producers, against the LINE
// STAND-IN on loopback: secrets named by their variable (never printed), tokens tried.
describe('doctor: producer checks', () => {
  let line: LineStandIn;
  beforeEach(async () => {
    line = await startLineStandIn();
  });
  afterEach(async () => {
    await line.close();
  });
  const config = (yaml: string, env: Record<string, string>) =>
    parseConfig(yaml, { env, baseDir: '/srv', hostname: 'h' }).config;

  it('checks nothing that is not enabled', async () => {
    expect(await producerChecks(config('', {}))).toEqual([]);
  });

  it('LINE: a token the API accepts is ok; a refused one says how to fix it, and no secret is printed', async () => {
    const yaml = `line:\n  enabled: true\n  api_url: ${line.url}\n`;
    const good = await producerChecks(
      config(yaml, { LINE_CHANNEL_SECRET: line.channelSecret, LINE_CHANNEL_ACCESS_TOKEN: line.accessToken }),
    );
    expect(good).toEqual([
      { ok: true, what: expect.stringContaining('channel access token accepted (bot codefleet stand-in)') },
    ]);
    const bad = await producerChecks(
      config(yaml, { LINE_CHANNEL_SECRET: line.channelSecret, LINE_CHANNEL_ACCESS_TOKEN: 'revoked-token-0123456789' }),
    );
    expect(bad).toEqual([
      {
        ok: false,
        what: expect.stringContaining('refused the channel access token (HTTP 401)'),
        fix: expect.stringContaining('$LINE_CHANNEL_ACCESS_TOKEN'),
      },
    ]);
    expect(JSON.stringify([good, bad])).not.toContain(line.accessToken);
    expect(JSON.stringify(bad)).not.toContain('revoked-token-0123456789');
  });

  it('Slack: both tokens tried in Socket Mode; a refused one is named by its variable only', async () => {
    const slack = await startSlackStandIn();
    try {
      const yaml = `slack:\n  enabled: true\n  api_url: ${slack.apiUrl}\n`;
      const good = await producerChecks(
        config(yaml, { SLACK_BOT_TOKEN: slack.botToken, SLACK_APP_TOKEN: slack.appToken }),
      );
      expect(good).toEqual([{ ok: true, what: expect.stringContaining('bot token accepted') }]);
      const bad = await producerChecks(
        config(yaml, { SLACK_BOT_TOKEN: slack.botToken, SLACK_APP_TOKEN: 'xapp-1-revoked-0123456789' }),
      );
      expect(bad).toEqual([{ ok: false, what: expect.stringContaining('SLACK_APP_TOKEN'), fix: expect.any(String) }]);
      for (const secret of [slack.botToken, slack.appToken, 'xapp-1-revoked-0123456789'])
        expect(JSON.stringify([good, bad])).not.toContain(secret);
    } finally {
      await slack.close();
    }
  });

  it('the HTTP API: its token, and the callback secret when callbacks are allowed', async () => {
    const yaml = 'http_api:\n  enabled: true\n  callback_hosts: [ci.example]\n';
    const checks = await producerChecks(config(yaml, { CODEFLEET_API_TOKEN: 'api-token-0123456789' }));
    expect(checks.map((c) => c.ok)).toEqual([true, false]);
    expect(checks[1]!.what).toContain('$CODEFLEET_CALLBACK_SECRET');
  });
});
