import { BlockList, isIP } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';

/** A reverse proxy that signs people in and names them in a header. */
export interface TrustedProxy {
  /** The header holding the signed-in user's name, e.g. `X-Forwarded-User`. */
  header: string;
  /** Addresses (`127.0.0.1`) and subnets (`10.0.0.0/8`) the proxy connects from. */
  from: readonly string[];
}

/** What a proxy may name an operator: the names the config allows, e-mail addresses included. */
const operatorName = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$/;

/**
 * The operator a request names in the proxy's header, believed only when the connection
 * comes from one of the proxy's addresses: from anywhere else anyone could send the header.
 * A header that is missing, repeated or not a name identifies no one.
 */
export function proxyIdentity(
  proxy: TrustedProxy,
): (remote: string | undefined, headers: IncomingHttpHeaders) => string | undefined {
  const trusted = new BlockList();
  for (const entry of proxy.from) {
    const [address = '', prefix] = entry.split('/');
    const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) trusted.addAddress(address, type);
    else trusted.addSubnet(address, Number(prefix), type);
  }
  const name = proxy.header.toLowerCase();
  return (remote, headers) => {
    if (remote === undefined) return undefined;
    // A dual-stack server sees an IPv4 client as ::ffff:a.b.c.d.
    const address = remote.startsWith('::ffff:') && isIP(remote.slice(7)) === 4 ? remote.slice(7) : remote;
    const family = isIP(address);
    if (family === 0 || !trusted.check(address, family === 4 ? 'ipv4' : 'ipv6')) return undefined;
    const value = headers[name];
    return typeof value === 'string' && operatorName.test(value.trim()) ? value.trim() : undefined;
  };
}
