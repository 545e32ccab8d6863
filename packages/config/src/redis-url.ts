import { BlockList, isIP } from 'node:net';
import type { ConfigProblem } from './errors.js';
import type { Config } from './types.js';

/**
 * What a Redis URL says about how its connection is protected. Whoever reaches a Redis
 * without a password can enqueue, claim and settle jobs and rewrite run records, so the
 * rule is: credentials for every host that is not this one; TLS so they do not travel in
 * clear text.
 */
export interface RedisUrlSecurity {
  /** `host:port` as written (IPv6 in brackets), or the socket path: never the credentials. */
  where: string;
  /** `rediss://`: ioredis speaks TLS (it checks the scheme's spelling exactly, so do we). */
  tls: boolean;
  /** `none`; `password` (`:pass@`, the `default` user, Redis `requirepass`); `acl-user` (`user:pass@`). */
  credentials: 'none' | 'password' | 'acl-user';
  /** The ACL user, when one is named. */
  user?: string;
  /** The password as ioredis sends it (percent-decoded), for log masking. */
  password?: string;
  /** 127.0.0.0/8, ::1, localhost or a Unix socket: only processes of this host can connect. */
  loopback: boolean;
}

const loopbackAddresses = new BlockList();
loopbackAddresses.addSubnet('127.0.0.0', 8, 'ipv4');
loopbackAddresses.addAddress('::1', 'ipv6');

/** True for an address or name that always means this host (a compose service name does not). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare.toLowerCase() === 'localhost') return true;
  const family = isIP(bare);
  return family !== 0 && loopbackAddresses.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Reads a Redis URL the way ioredis will use it: `redis://[[user]:password@]host[:port][/db]`,
 * `rediss://…` for TLS, or an absolute Unix socket path. Returns the reason when ioredis
 * would not connect where it seems to (a misspelt scheme, no host).
 */
export function readRedisUrl(text: string): RedisUrlSecurity | { error: string } {
  if (text.startsWith('/')) return { where: text, tls: false, credentials: 'none', loopback: true };
  const expected = 'expected redis://[user:password@]host:port or rediss://… (TLS), or a Unix socket path';
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(text)?.[1];
  if (scheme !== 'redis' && scheme !== 'rediss') {
    const hint =
      scheme?.toLowerCase() === 'redis' || scheme?.toLowerCase() === 'rediss'
        ? ` (write the scheme ${scheme.toLowerCase()}:// in lower case)`
        : '';
    return { error: `not a Redis URL${hint}: ${expected}` };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // A base64 password spliced in from the environment is the usual cause.
    const hint = text.includes('@')
      ? ' (percent-encode / ? # @ : in a password, or use one without them: openssl rand -hex 32)'
      : '';
    return { error: `not a valid URL${hint}: ${expected}` };
  }
  if (url.hostname === '') return { error: `no host: ${expected}` };
  let user: string;
  let password: string;
  try {
    user = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    return { error: 'the user or password is not valid percent-encoding (write % as %25)' };
  }
  const credentials = password === '' ? 'none' : user === '' || user === 'default' ? 'password' : 'acl-user';
  return {
    where: `${url.hostname}:${url.port === '' ? '6379' : url.port}`,
    tls: scheme === 'rediss',
    credentials,
    ...(credentials === 'acl-user' ? { user } : {}),
    ...(password === '' ? {} : { password }),
    loopback: isLoopbackHost(url.hostname),
  };
}

/** One Redis connection the config makes: the key that names it and its URL. */
export interface RedisUrlInUse {
  path: 'queue.bullmq.url' | 'queue.sqs.coordination_url' | 'store.redis_url';
  url: string;
}

/** The Redis URLs this config connects to; the others (an unused backend's default) are never dialled. */
export function redisUrlsInUse({ queue, store }: Config): RedisUrlInUse[] {
  const used: RedisUrlInUse[] = [];
  if (queue.backend === 'bullmq') used.push({ path: 'queue.bullmq.url', url: queue.bullmq.url });
  if (queue.backend === 'sqs') used.push({ path: 'queue.sqs.coordination_url', url: queue.sqs.coordination_url });
  if (store.backend === 'redis') used.push({ path: 'store.redis_url', url: store.redis_url });
  return used;
}

/** What to write instead of an open URL, for messages: the same host with a user, a password variable and TLS. */
export function closedRedisUrlExample(where: string): string {
  return `rediss://codefleet:\${REDIS_PASSWORD}@${where}`;
}

/**
 * The rule: each Redis URL in use parses, and one to another host carries a password
 * unless `allow_insecure_redis` is true. TLS is not required here (a loopback or an
 * otherwise encrypted network may not need it); `codefleet doctor` warns about a
 * password sent in clear text.
 */
export function redisUrlProblems(config: Config): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const { path, url } of redisUrlsInUse(config)) {
    const read = readRedisUrl(url);
    if ('error' in read) {
      problems.push({ path, message: read.error });
      continue;
    }
    if (read.credentials !== 'none' || read.loopback || config.allow_insecure_redis) continue;
    problems.push({
      path,
      message:
        `Redis at ${read.where} is not on this host and the URL has no password: anyone who can reach it can forge jobs. ` +
        `Give the URL a user and password (${closedRedisUrlExample(read.where)}, the password from the environment), ` +
        'or set allow_insecure_redis: true to accept an open Redis',
    });
  }
  return problems;
}

/** The passwords of the Redis URLs in use, as written and as sent, so logs mask them. */
export function redisPasswords(config: Config): string[] {
  const values: string[] = [];
  for (const { url } of redisUrlsInUse(config)) {
    const read = readRedisUrl(url);
    if ('error' in read || read.password === undefined) continue;
    values.push(read.password);
    const written = /^[^:]*:\/\/[^:@/]*:([^@/]*)@/.exec(url)?.[1];
    if (written !== undefined && written !== read.password) values.push(written);
  }
  return values;
}
