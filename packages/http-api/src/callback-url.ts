import { isIP } from 'node:net';

/** True for a host name that is this machine: `localhost`, 127.0.0.0/8, `::1`. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

/**
 * Why `url` may not be a completion webhook, or undefined when it may: it must be https
 * (http only on loopback, where nothing crosses a network), carry no credentials, and its
 * host must be one of `hosts` (`http_api.callback_hosts`, compared case-insensitively), so
 * a client holding the API token cannot make codefleet POST into the operator's network.
 */
export function callbackUrlProblem(url: string, hosts: readonly string[]): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'callback_url is not a URL';
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && isLoopbackHost(host))) {
    return 'callback_url must be https (http only on loopback)';
  }
  if (parsed.username !== '' || parsed.password !== '') return 'callback_url must not carry credentials';
  if (!hosts.some((h) => h.replace(/^\[|\]$/g, '').toLowerCase() === host)) {
    return hosts.length === 0
      ? 'callbacks are disabled: http_api.callback_hosts is empty'
      : `callback_url host ${host} is not in http_api.callback_hosts`;
  }
  return undefined;
}
