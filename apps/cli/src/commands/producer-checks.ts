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
  if (slack.enabled) checks.push(...(await slackChecks(slack, fetchImpl)));
  if (line.enabled) checks.push(await lineCheck(line, fetchImpl));
  if (api.enabled) {
    checks.push(api.token === undefined
      ? { ok: false, what: `http api: no bearer token in $${api.token_env}`, fix: `export ${api.token_env}=<a long random string> (clients send it as Authorization: Bearer)` }
      : { ok: true, what: `http api: token found in $${api.token_env}; listening on ${api.host}:${api.port} when served` });
    if (api.callback_hosts.length > 0 && api.callback_secret === undefined) {
      checks.push({ ok: false, what: `http api: callback_hosts are set but $${api.callback_secret_env} is not`, fix: `export ${api.callback_secret_env}=<secret>: completion webhooks are signed with it` });
    }
  }
  return checks;
}

async function slackChecks(slack: Config['slack'], fetchImpl: typeof fetch): Promise<Check[]> {
  const checks: Check[] = [];
  if (slack.bot_token === undefined) {
    checks.push({ ok: false, what: `slack: no bot token in $${slack.bot_token_env}`, fix: `export ${slack.bot_token_env}=xoxb-… (OAuth & Permissions → Bot User OAuth Token)` });
  } else {
    const answer = await slackCall(fetchImpl, slack.api_url, 'auth.test', slack.bot_token);
    checks.push(answer.ok
      ? { ok: true, what: `slack: bot token accepted (team ${String(answer.body.team ?? '?')}, bot user ${String(answer.body.user ?? '?')})` }
      : { ok: false, what: `slack: auth.test failed: ${answer.error}`, fix: `check $${slack.bot_token_env} (a bot token, xoxb-…) and that the app is installed to the workspace` });
  }
  if (slack.mode === 'socket') {
    if (slack.app_token === undefined) {
      checks.push({ ok: false, what: `slack: Socket Mode needs an app-level token in $${slack.app_token_env}`, fix: `export ${slack.app_token_env}=xapp-… (Basic Information → App-Level Tokens, scope connections:write), or set slack.mode: http` });
    } else {
      const answer = await slackCall(fetchImpl, slack.api_url, 'apps.connections.open', slack.app_token);
      checks.push(answer.ok
        ? { ok: true, what: 'slack: Socket Mode connection URL granted' }
        : { ok: false, what: `slack: apps.connections.open failed: ${answer.error}`, fix: `check $${slack.app_token_env} (xapp-…, connections:write) and that Socket Mode is on in the app's settings` });
    }
  } else if (slack.signing_secret === undefined) {
    checks.push({ ok: false, what: `slack: HTTP events need the signing secret in $${slack.signing_secret_env}`, fix: `export ${slack.signing_secret_env}=… (Basic Information → Signing Secret)` });
  } else {
    checks.push({ ok: true, what: `slack: signing secret found; events are received on ${slack.host}:${slack.port}/slack/events` });
  }
  return checks;
}

async function slackCall(fetchImpl: typeof fetch, apiUrl: string, method: string, token: string): Promise<{ ok: true; body: Record<string, unknown> } | { ok: false; error: string }> {
  try {
    const response = await fetchImpl(new URL(method, apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`), {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' }, body: '',
      signal: AbortSignal.timeout(timeoutMs), redirect: 'error',
    });
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (body.ok === true) return { ok: true, body };
    return { ok: false, error: typeof body.error === 'string' ? body.error : `HTTP ${response.status}` };
  } catch (err) {
    return { ok: false, error: `not reachable (${(err as Error).message})` };
  }
}

async function lineCheck(line: Config['line'], fetchImpl: typeof fetch): Promise<Check> {
  if (line.channel_secret === undefined) {
    return { ok: false, what: `line: no channel secret in $${line.channel_secret_env}`, fix: `export ${line.channel_secret_env}=… (LINE Developers console → Basic settings → Channel secret)` };
  }
  if (line.channel_access_token === undefined) {
    return { ok: false, what: `line: no channel access token in $${line.channel_access_token_env}`, fix: `export ${line.channel_access_token_env}=… (Messaging API → Channel access token)` };
  }
  try {
    const response = await fetchImpl(new URL('/v2/bot/info', line.api_url), {
      headers: { authorization: `Bearer ${line.channel_access_token}` }, signal: AbortSignal.timeout(timeoutMs), redirect: 'error',
    });
    if (response.ok) {
      const body = (await response.json().catch(() => ({}))) as { displayName?: string };
      return { ok: true, what: `line: channel access token accepted (bot ${body.displayName ?? '?'}); webhook on ${line.host}:${line.port}` };
    }
    return { ok: false, what: `line: the Messaging API refused the channel access token (HTTP ${response.status})`, fix: `check $${line.channel_access_token_env}; issue a new long-lived token in the LINE Developers console` };
  } catch (err) {
    return { ok: false, what: `line: the Messaging API is not reachable (${(err as Error).message})`, fix: `check line.api_url (${line.api_url}) and the host's network` };
  }
}
