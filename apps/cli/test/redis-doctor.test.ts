import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { createTempDir, FLEET_ACL_RULES, startRedis, type RedisServer, type TempDir } from '@codefleet/testkit';
import { redisChecks } from '../src/commands/redis-check.js';
import { cli } from './cli-helpers.js';

const fleet = (url: string, extra = '') =>
  `${extra}queue:\n  backend: bullmq\n  bullmq:\n    url: "${url}"\nstore:\n  backend: redis\n  redis_url: "${url}"\n`;
const checksFor = (text: string) => redisChecks(parseConfig(text, { env: {}, baseDir: '/srv', hostname: 'h' }).config);

describe('doctor: the security of each Redis connection', () => {
  it('says password, TLS and loopback, one line per URL, and warns with the fix', () => {
    expect(checksFor(fleet('rediss://codefleet:pw-0123456789@redis.fleet.lan:6380'))).toEqual([
      {
        ok: true,
        what: 'redis (queue.bullmq.url, store.redis_url) redis.fleet.lan:6380: password yes (ACL user codefleet), TLS yes, another host',
      },
    ]);
    expect(checksFor(fleet('redis://:pw-0123456789@10.0.0.5:6379'))).toEqual([
      {
        ok: true,
        what: expect.stringMatching(
          /^WARNING redis .* 10\.0\.0\.5:6379: password yes \(default user\), TLS no, another host: the password and every job cross the network in clear text$/,
        ),
        fix: expect.stringContaining('rediss://'),
      },
    ]);
    expect(checksFor(fleet('redis://10.0.0.5:6379', 'allow_insecure_redis: true\n'))[0]).toEqual({
      ok: true,
      what: expect.stringMatching(
        /^WARNING .*password no, TLS no, another host: anyone who reaches it can forge jobs \(accepted because allow_insecure_redis is true\)$/,
      ),
      fix: expect.stringContaining('rediss://codefleet:${REDIS_PASSWORD}@10.0.0.5:6379'),
    });
    expect(checksFor(fleet('redis://127.0.0.1:6379'))[0]).toMatchObject({
      ok: true,
      what: expect.stringMatching(/^WARNING .*on this host \(loopback\): any process on this host can connect/),
    });
    expect(checksFor('')).toEqual([]);
  });
});

describe('doctor against a Redis deployed closed', () => {
  const password = 'fleet-8e3f6a1c2d07';
  let redis: RedisServer;
  let dir: TempDir;
  beforeAll(async () => {
    redis = await startRedis({
      password: 'admin-5c1e0d2b7a94',
      users: { codefleet: `on >${password} ${FLEET_ACL_RULES}` },
    });
    dir = await createTempDir('cli-redis-doctor');
  });
  afterAll(async () => {
    await redis?.stop();
    await dir?.dispose();
  });

  it('refuses to start on an open Redis of another host, naming the key and the way out', async () => {
    await writeFile(join(dir.path, 'config.yaml'), fleet('redis://redis:6379'));
    const result = await cli(dir.path, 'doctor');
    expect(result.code).toBe(2);
    expect(result.err).toMatch(
      /queue\.bullmq\.url: Redis at redis:6379 is not on this host and the URL has no password: anyone who can reach it can forge jobs/,
    );
    expect(result.err).toContain('allow_insecure_redis: true');
  });

  it('connects through the ACL user, and names the setting when the password is wrong', async () => {
    await writeFile(
      join(dir.path, 'config.yaml'),
      `data_dir: ./data\nlogging:\n  level: silent\n${fleet(redis.urlAs('codefleet', password))}`,
    );
    const good = await cli(dir.path, 'doctor');
    expect(good.out).toMatch(
      new RegExp(
        `^ok {4}redis \\(queue\\.bullmq\\.url, store\\.redis_url\\) 127\\.0\\.0\\.1:${redis.port}: password yes \\(ACL user codefleet\\), TLS no, on this host \\(loopback\\)$`,
        'm',
      ),
    );
    expect(good.out).toMatch(/^ok {4}queue \(bullmq\): depth 0/m);
    expect(good.out).toMatch(/^ok {4}run store \(redis\): no runs yet/m);
    expect(good.out).not.toContain(password);

    await writeFile(
      join(dir.path, 'config.yaml'),
      `data_dir: ./data\nlogging:\n  level: silent\n${fleet(redis.urlAs('codefleet', 'wrong-password-1'))}`,
    );
    const bad = await cli(dir.path, 'doctor');
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(
      /^FAIL {2}queue \(bullmq\) .*refused the user or password: check the user and password in queue\.bullmq\.url \(WRONGPASS\)/m,
    );
    expect(bad.out).toMatch(/^FAIL {2}run store \(redis\) .*store\.redis_url \(WRONGPASS\)/m);
    expect(bad.out).not.toContain('wrong-password-1');
  });
});
