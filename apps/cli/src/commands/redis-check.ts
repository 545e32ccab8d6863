import { closedRedisUrlExample, readRedisUrl, redisUrlsInUse, type Config } from '@codefleet/config';
import type { Check } from './doctor.js';

/**
 * One `doctor` line per Redis the config connects to (keys sharing a URL share a line):
 * whether it has a password, TLS, and whether it is on this host, with what to fix.
 * Whoever reaches a Redis without its password can forge jobs, so anything short of a
 * password plus TLS (or loopback) is a warning. An open Redis on another host never gets
 * here: the config refuses it at load, and doctor prints that refusal instead.
 */
export function redisChecks(config: Config): Check[] {
  const byUrl = new Map<string, string[]>();
  for (const { path, url } of redisUrlsInUse(config)) byUrl.set(url, [...(byUrl.get(url) ?? []), path]);
  const checks: Check[] = [];
  for (const [url, paths] of byUrl) {
    const read = readRedisUrl(url);
    if ('error' in read) continue;
    const who =
      read.credentials === 'acl-user'
        ? `yes (ACL user ${read.user})`
        : read.credentials === 'password'
          ? 'yes (default user)'
          : 'no';
    const facts = `${read.where}: password ${who}, TLS ${read.tls ? 'yes' : 'no'}, ${read.loopback ? 'on this host (loopback)' : 'another host'}`;
    const what = `redis (${paths.join(', ')}) ${facts}`;
    if (read.credentials === 'none' && read.loopback) {
      checks.push({
        ok: true,
        what: `WARNING ${what}: any process on this host can connect and forge jobs, an agent whose sandbox has network too`,
        fix: `give Redis a password (requirepass, or an ACL user) and put it in ${paths.join(' and ')}: redis://:\${REDIS_PASSWORD}@${read.where}`,
      });
    } else if (read.credentials === 'none') {
      checks.push({
        ok: true,
        what: `WARNING ${what}: anyone who reaches it can forge jobs (accepted because allow_insecure_redis is true)`,
        fix: `give Redis an ACL user with a password and TLS, use ${closedRedisUrlExample(read.where)}, and remove allow_insecure_redis`,
      });
    } else if (!read.tls && !read.loopback) {
      checks.push({
        ok: true,
        what: `WARNING ${what}: the password and every job cross the network in clear text`,
        fix: 'turn on TLS in Redis (tls-port, tls-cert-file, tls-key-file) and use rediss:// (NODE_EXTRA_CA_CERTS for a private CA)',
      });
    } else {
      checks.push({ ok: true, what });
    }
  }
  return checks;
}
