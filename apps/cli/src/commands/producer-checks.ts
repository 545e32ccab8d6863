import type { Config } from '@codefleet/config';
import type { Check } from './doctor.js';

/** How long doctor waits for a chat service to answer. */
const timeoutMs = 5_000;

/**
 * The enabled chat and HTTP producers: their secrets are set, and the services accept them
 * (Slack `auth.test` with the bot token and, in Socket Mode, `apps.connections.open` with the
 * app token; LINE's bot info with the channel access token). Nothing is printed of a secret
 * but the name of its variable. Producers that are not enabled are not checked.
 */
export async function producerChecks(config: Config, fetchImpl: typeof fetch = fetch): Promise<Check[]> {
  const checks: Check[] = [];
  const { slack, line, http_api: api } = config;
  if (slack.enabled) checks.push(...(await slackChecks(slack)));
  if (line.enabled) checks.push(await lineCheck(line, fetchImpl));
  if (api.enabled) {
    checks.push(
      api.token === undefined
        ? {
            ok: false,
            what: `http api: no bearer token in $${api.token_env}`,
            fix: `export ${api.token_env}=<a long random string> (clients send it as Authorization: Bearer)`,
          }
        : {
            ok: true,
            what: `http api: token found in $${api.token_env}; listening on ${api.host}:${api.port} when served`,
          },
    );
    if (api.callback_hosts.length > 0 && api.callback_secret === undefined) {
      checks.push({
        ok: false,
        what: `http api: callback_hosts are set but $${api.callback_secret_env} is not`,
        fix: `export ${api.callback_secret_env}=<secret>: completion webhooks are signed with it`,
      });
    }
  }
  return checks;
}

/** Slack's tokens tried by `checkSlack` (auth.test; apps.connections.open in Socket Mode). */
async function slackChecks(slack: Config['slack']): Promise<Check[]> {
  const { checkSlack } = await import('@codefleet/slack');
  const result = await checkSlack(slack);
  if (result.ok) {
    const where =
      slack.mode === 'socket'
        ? 'Socket Mode connection URL granted'
        : `events ${slack.port === undefined ? 'at /slack/events on the serve port' : `on ${slack.host}:${slack.port}/slack/events`}`;
    return [
      {
        ok: true,
        what: `slack: bot token accepted (team ${result.team ?? '?'}, bot user ${result.botUserId ?? '?'}); ${where}`,
      },
    ];
  }
  return result.problems.map((problem) => ({
    ok: false,
    what: `slack: ${problem}`,
    fix: 'see docs/chat.md "Slack": the bot token (xoxb-…, Install App), the app-level token with connections:write (xapp-…, Socket Mode) or the signing secret (HTTP events)',
  }));
}

async function lineCheck(line: Config['line'], fetchImpl: typeof fetch): Promise<Check> {
  if (line.channel_secret === undefined) {
    return {
      ok: false,
      what: `line: no channel secret in $${line.channel_secret_env}`,
      fix: `export ${line.channel_secret_env}=… (LINE Developers console → Basic settings → Channel secret)`,
    };
  }
  if (line.channel_access_token === undefined) {
    return {
      ok: false,
      what: `line: no channel access token in $${line.channel_access_token_env}`,
      fix: `export ${line.channel_access_token_env}=… (Messaging API → Channel access token)`,
    };
  }
  try {
    const response = await fetchImpl(new URL('/v2/bot/info', line.api_url), {
      headers: { authorization: `Bearer ${line.channel_access_token}` },
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    if (response.ok) {
      const body = (await response.json().catch(() => ({}))) as { displayName?: string };
      return {
        ok: true,
        what: `line: channel access token accepted (bot ${body.displayName ?? '?'}); webhook ${line.port === undefined ? 'at /line on the serve port' : `on ${line.host}:${line.port}`}`,
      };
    }
    return {
      ok: false,
      what: `line: the Messaging API refused the channel access token (HTTP ${response.status})`,
      fix: `check $${line.channel_access_token_env}; issue a new long-lived token in the LINE Developers console`,
    };
  } catch (err) {
    return {
      ok: false,
      what: `line: the Messaging API is not reachable (${(err as Error).message})`,
      fix: `check line.api_url (${line.api_url}) and the host's network`,
    };
  }
}
