import { describe, expect, it } from '@jest/globals';
import { isLoopbackHost, readRedisUrl } from '../src/index.js';
import { configError, parse, problems, yaml } from './helpers.js';

const bullmq = (url: string, ...more: string[]) =>
  yaml('queue:', '  backend: bullmq', '  bullmq:', `    url: "${url}"`, ...more);

describe('readRedisUrl', () => {
  it('tells credentials, TLS and loopback apart', () => {
    expect(readRedisUrl('redis://127.0.0.1:6379')).toEqual({
      where: '127.0.0.1:6379',
      tls: false,
      credentials: 'none',
      loopback: true,
    });
    expect(readRedisUrl('redis://:s3cret@redis:6379/0')).toEqual({
      where: 'redis:6379',
      tls: false,
      credentials: 'password',
      password: 's3cret',
      loopback: false,
    });
    expect(readRedisUrl('rediss://codefleet:p%40ss@10.0.0.5:6380')).toEqual({
      where: '10.0.0.5:6380',
      tls: true,
      credentials: 'acl-user',
      user: 'codefleet',
      password: 'p@ss',
      loopback: false,
    });
    expect(readRedisUrl('redis://default:pw@localhost')).toMatchObject({
      credentials: 'password',
      where: 'localhost:6379',
      loopback: true,
    });
    // A user without a password sends no AUTH a server with a password accepts.
    expect(readRedisUrl('redis://codefleet@10.0.0.5')).toMatchObject({ credentials: 'none' });
    expect(readRedisUrl('/var/run/redis.sock')).toMatchObject({ loopback: true, credentials: 'none' });
  });

  it('refuses what ioredis would not read as Redis where it seems to point', () => {
    expect(readRedisUrl('redis.lan:6379')).toEqual({
      error: expect.stringMatching(/^not a Redis URL: expected redis:\/\//),
    });
    expect(readRedisUrl('http://redis.lan:6379')).toEqual({ error: expect.stringMatching(/^not a Redis URL/) });
    // ioredis turns TLS on only for the exact spelling rediss://.
    expect(readRedisUrl('REDISS://h:6380')).toEqual({
      error: expect.stringContaining('write the scheme rediss:// in lower case'),
    });
    expect(readRedisUrl('redis://:6379')).toEqual({ error: expect.stringMatching(/^(not a valid URL|no host)/) });
    expect(readRedisUrl('redis://:%E0%A4%A@h')).toEqual({ error: expect.stringContaining('percent-encoding') });
  });

  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['localhost', true],
    ['LocalHost', true],
    ['[::1]', true],
    ['[::ffff:7f00:1]', true],
    ['redis', false],
    ['10.0.0.5', false],
    ['0.0.0.0', false],
    ['[::]', false],
    ['localhost.example.com', false],
    ['128.0.0.1', false],
  ])('%s is loopback: %s', (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });
});

describe('allow_insecure_redis and the Redis URLs in use', () => {
  it('refuses a URL to another host without a password, naming the key and the fix', () => {
    expect(problems(bullmq('redis://redis:6379'))).toEqual([
      {
        path: 'queue.bullmq.url',
        message: expect.stringMatching(
          /^Redis at redis:6379 is not on this host and the URL has no password: .*rediss:\/\/codefleet:\$\{REDIS_PASSWORD\}@redis:6379.*allow_insecure_redis: true/,
        ),
      },
    ]);
    // TLS without a password is still open to anyone who reaches the port.
    expect(problems(bullmq('rediss://10.0.0.5:6380'))[0]?.path).toBe('queue.bullmq.url');
  });

  it('checks every Redis the config connects to, and only those', () => {
    const open = 'redis://10.0.0.5:6379';
    expect(
      problems(
        yaml(
          'queue:',
          '  backend: sqs',
          '  sqs:',
          '    queue_url: https://sqs.us-east-1.amazonaws.com/1/q',
          `    coordination_url: ${open}`,
          'store:',
          '  backend: redis',
          `  redis_url: ${open}`,
        ),
      ).map((p) => p.path),
    ).toEqual(['queue.sqs.coordination_url', 'store.redis_url']);
    // The default backends dial no Redis: an unused URL is not checked.
    expect(() =>
      parse(yaml('queue:', '  bullmq:', `    url: ${open}`, 'store:', `  redis_url: not-a-url`)),
    ).not.toThrow();
  });

  it('accepts loopback without a password, a password on any host, and an open host when allowed', () => {
    for (const url of [
      'redis://127.0.0.1:6379',
      'redis://localhost:6379',
      'redis://[::1]:6379',
      'redis://:pw@redis:6379',
      'rediss://codefleet:pw@10.0.0.5:6380',
    ]) {
      expect([url, parse(bullmq(url)).config.queue.bullmq.url]).toEqual([url, url]);
    }
    expect(
      parse(yaml('allow_insecure_redis: true', ...bullmq('redis://redis:6379').trim().split('\n'))).config
        .allow_insecure_redis,
    ).toBe(true);
    expect(
      parse(yaml('allow_insecure_redis: ${OPEN}', ...bullmq('redis://redis:6379').trim().split('\n')), { OPEN: 'true' })
        .config.allow_insecure_redis,
    ).toBe(true);
  });

  it('refuses an invalid URL in use', () => {
    expect(problems(yaml('store:', '  backend: redis', '  redis_url: redis.lan:6379'))).toEqual([
      { path: 'store.redis_url', message: expect.stringMatching(/^not a Redis URL/) },
    ]);
  });

  it('takes the password from the environment and masks it in logs, as written and as sent', () => {
    const env = { REDIS_PASS: '9f2c4e6a8b0d1357' };
    const loaded = parse(
      yaml('store:', '  backend: redis', '  redis_url: rediss://codefleet:${REDIS_PASS}@redis.lan:6380'),
      env,
    );
    expect(loaded.config.store.redis_url).toBe('rediss://codefleet:9f2c4e6a8b0d1357@redis.lan:6380');
    // REDIS_PASS is no secret by its name; the URL makes it one.
    expect(loaded.secrets).toContain('9f2c4e6a8b0d1357');
    const encoded = parse(bullmq('redis://:p%40ssw0rd@redis:6379'));
    expect(encoded.secrets).toEqual(expect.arrayContaining(['p@ssw0rd', 'p%40ssw0rd']));
  });

  it('says how to write a password that breaks the URL (base64 from the environment)', () => {
    expect(problems(bullmq('rediss://codefleet:${P}@redis.lan:6380'), { P: 'ab/cd+ef==' })).toEqual([
      {
        path: 'queue.bullmq.url',
        message: expect.stringContaining(
          'percent-encode / ? # @ : in a password, or use one without them: openssl rand -hex 32',
        ),
      },
    ]);
  });

  it('does not echo a password in a refusal', () => {
    const error = configError(() => parse(bullmq('http://user:hunter22@redis:6379')));
    expect(error.message).not.toContain('hunter22');
  });
});
