import { BlockList, isIP } from 'node:net';

/**
 * What a sandboxed run may reach on the network (config.yaml `sandbox.network`):
 * - `public`: the public internet (agents call their APIs, installs reach registries);
 * - `allowlist`: only the hosts named in `allow`;
 * - `none`: nothing at all.
 * In every mode the host's loopback, private (RFC 1918, CGNAT, ULA), link-local (cloud
 * metadata at 169.254.169.254 among them), multicast and reserved addresses are refused,
 * judged on the address a name resolves to, unless `allow` names that host and port.
 */
export type NetworkMode = 'public' | 'allowlist' | 'none';

/** The network policy of a sandbox; `allow` holds entries as {@link parseAllowEntry} reads them. */
export interface NetworkPolicy {
  mode: NetworkMode;
  allow: readonly string[];
}

/** One `allow` entry: a host name (`*.` for any subdomain) or an IP address, and a port or any. */
export interface AllowEntry {
  host: string;
  /** `*.example.com`: the name and every name under it. */
  wildcard: boolean;
  port?: number;
}

/**
 * Reads `host`, `host:port`, `*.domain[:port]`, `1.2.3.4[:port]` or `[v6][:port]`. A name is
 * compared lowercased and without a trailing dot, as DNS compares it.
 *
 * @throws {Error} naming the entry when it cannot be read.
 */
export function parseAllowEntry(entry: string): AllowEntry {
  const text = entry.trim();
  const bracketed = /^\[([0-9a-fA-F:.]+)\](?::(\d+))?$/.exec(text);
  const [, hostPart, portPart] =
    bracketed ?? (isIP(text) === 6 ? [text, text, undefined] : (/^([^:\s/]+)(?::(\d+))?$/.exec(text) ?? []));
  if (hostPart === undefined)
    throw new Error(
      `sandbox.network.allow: cannot read ${JSON.stringify(entry)}: write host, host:port, *.domain or [v6]:port`,
    );
  const port = portPart === undefined ? undefined : Number(portPart);
  if (port !== undefined && !(port >= 1 && port <= 65_535))
    throw new Error(`sandbox.network.allow: port out of range in ${JSON.stringify(entry)}`);
  const wildcard = hostPart.startsWith('*.');
  const host = normalizeHost(wildcard ? hostPart.slice(2) : hostPart);
  if (host === '' || (wildcard && isIP(host) !== 0))
    throw new Error(`sandbox.network.allow: cannot read ${JSON.stringify(entry)}`);
  return { host, wildcard, ...(port === undefined ? {} : { port }) };
}

/** A host as a destination is compared: lowercased, no trailing dot, no IPv6 brackets. */
export function normalizeHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

/** Whether `allow` names `host` (as the client asked for it) at `port`. */
function isAllowed(allow: readonly AllowEntry[], host: string, port: number): boolean {
  const name = normalizeHost(host);
  return allow.some(
    (entry) =>
      (entry.port === undefined || entry.port === port) &&
      (entry.host === name || (entry.wildcard && name.endsWith(`.${entry.host}`))),
  );
}

// Addresses a run must never reach unless named: this host, the private networks around it
// (CGNAT's 100.64/10 too: Tailscale puts a fleet's hosts there), link-local (cloud metadata
// services), and what is not a unicast host at all. The documentation ranges (TEST-NETs) are
// left alone: no host of ours is there, and sealed build networks do use them for egress.
const internal = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  internal.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  internal.addSubnet(net, prefix, 'ipv6');

/**
 * Whether `address` (an IP literal) is internal: loopback, private, link-local, multicast or
 * reserved. IPv4 written inside IPv6 (`::ffff:127.0.0.1`, NAT64 `64:ff9b::7f00:1`, the old
 * `::127.0.0.1`) is judged as the IPv4 address it carries.
 */
export function isInternalAddress(address: string): boolean {
  const kind = isIP(address);
  if (kind === 4) return internal.check(address, 'ipv4');
  if (kind !== 6) return true;
  const embedded = embeddedIpv4(address);
  if (embedded !== undefined) return internal.check(embedded, 'ipv4');
  return internal.check(address, 'ipv6');
}

function embeddedIpv4(address: string): string | undefined {
  const groups = expandIpv6(address);
  if (groups === undefined) return undefined;
  const head = groups.slice(0, 6);
  const zeros = (values: number[]) => values.every((value) => value === 0);
  const mapped = zeros(head.slice(0, 5)) && (head[5] === 0xffff || head[5] === 0);
  const nat64 = head[0] === 0x64 && head[1] === 0xff9b && zeros(head.slice(2));
  if (!mapped && !nat64) return undefined;
  // `::` and `::1` are IPv6's own unspecified and loopback addresses, not IPv4 ones.
  if (zeros(head) && (groups[6] ?? 0) === 0) return undefined;
  const [high = 0, low = 0] = groups.slice(6);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

function expandIpv6(address: string): number[] | undefined {
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (dotted !== undefined) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted.split('.').map(Number);
    text = `${text.slice(0, -dotted.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left = '', right] = text.split('::');
  const head = left === '' ? [] : left.split(':');
  const tail = right === undefined || right === '' ? [] : right.split(':');
  const fill = right === undefined ? 0 : 8 - head.length - tail.length;
  if (fill < 0) return undefined;
  const groups = [...head, ...Array<string>(fill).fill('0'), ...tail].map((group) => Number.parseInt(group, 16));
  return groups.length === 8 && groups.every((group) => group >= 0 && group <= 0xffff) ? groups : undefined;
}

/** Why a destination was refused, or that it may be reached at `address`. */
export type Verdict = { allowed: true; address: string } | { allowed: false; reason: string };

/**
 * The decision for one destination the client named (`host`, `port`), given what the name
 * resolved to. The connection is then made to the returned address and nowhere else, so a
 * name that resolves differently a moment later (DNS rebinding) changes nothing.
 */
export function decide(
  policy: { mode: NetworkMode; allow: readonly AllowEntry[] },
  host: string,
  port: number,
  addresses: readonly string[],
): Verdict {
  if (policy.mode === 'none') return { allowed: false, reason: 'sandbox.network is none' };
  const named = isAllowed(policy.allow, host, port);
  if (policy.mode === 'allowlist' && !named) return { allowed: false, reason: 'not in sandbox.network.allow' };
  if (addresses.length === 0) return { allowed: false, reason: 'the name does not resolve' };
  if (named) return { allowed: true, address: addresses[0]! };
  const external = addresses.find((address) => !isInternalAddress(address));
  if (external !== undefined) return { allowed: true, address: external };
  return {
    allowed: false,
    reason: `resolves to ${addresses[0]!}, an internal address (loopback, private, link-local or reserved); name it in sandbox.network.allow to permit`,
  };
}
