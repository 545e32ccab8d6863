import { describe, expect, it } from '@jest/globals';
import { createMasker, maskSecrets } from '../src/index.js';
import { TOKEN_KINDS } from './tokens.js';

describe('maskSecrets: token kinds', () => {
  it.each(TOKEN_KINDS)('masks a $kind token and keeps its prefix hint', ({ token, masked }) => {
    expect(maskSecrets(`before ${token} after`)).toBe(`before ${masked} after`);
    expect(maskSecrets(`"${token}"`)).toBe(`"${masked}"`);
    expect(maskSecrets(`KEY=${token}\n`)).toBe(`KEY=${masked}\n`);
  });

  it('masks Bearer and token authorization values', () => {
    expect(maskSecrets('Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_nature-x')).toBe('Bearer ***');
    expect(maskSecrets('curl -H "authorization: token 0123456789abcdef0123456789abcdef01234567" x')).toBe(
      'curl -H "authorization: ***" x',
    );
    expect(maskSecrets('sent token 0123456789abcdef0123456789abcdef01234567 to api')).toBe('sent token *** to api');
  });

  it('keeps the kind hint of a known token after Bearer', () => {
    expect(maskSecrets(`bearer ghp_${'x'.repeat(36)}`)).toBe('bearer ghp_[REDACTED]');
  });

  it('masks Authorization header values in JSON and text', () => {
    expect(maskSecrets('{"headers":{"Authorization":"Basic dXNlcjpwYXNzd29yZA==","accept":"json"}}')).toBe(
      '{"headers":{"Authorization":"***","accept":"json"}}',
    );
    expect(maskSecrets('{"authorization":"Bearer abc \\"quoted\\" def","x":1}')).toBe('{"authorization":"***","x":1}');
    expect(maskSecrets('Proxy-Authorization: Basic Zm9vOmJhcg==')).toBe('Proxy-Authorization: ***');
    expect(maskSecrets('{"authorization":null,"Authorization":{"scheme":"basic"}}')).toBe(
      '{"authorization":null,"Authorization":{"scheme":"basic"}}',
    );
  });

  it('masks credentials in URLs', () => {
    expect(maskSecrets('clone https://user:pa55word@example.com/repo.git')).toBe(
      'clone https://***@example.com/repo.git',
    );
    expect(maskSecrets('https://x-access-token:ghs_whatever@github.com/o/r.git')).toBe(
      'https://***@github.com/o/r.git',
    );
    expect(maskSecrets('redis://:redispass@10.0.0.5:6379/0')).toBe('redis://***@10.0.0.5:6379/0');
    expect(maskSecrets('see https://github.com/o/r/pull/1 and git@github.com:o/r.git')).toBe(
      'see https://github.com/o/r/pull/1 and git@github.com:o/r.git',
    );
  });

  it('masks PEM private keys, also when cut off', () => {
    const pem = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc=\n-----END RSA PRIVATE KEY-----';
    expect(maskSecrets(`key: ${pem} done`)).toBe(
      'key: -----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY----- done',
    );
    expect(maskSecrets('-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBg')).toBe(
      '-----BEGIN PRIVATE KEY-----[REDACTED]-----END PRIVATE KEY-----',
    );
  });

  it('leaves ordinary text alone', () => {
    const prose = [
      'token expired, refreshing',
      'Bearer token required',
      'use the scikit-learn task-runner-with-a-very-long-name',
      'ghp_short is not a token',
      'AKIA is a prefix; AKIAIOSFODNN7EXAMPLEX is too long',
      'https://github.com/owner/repo/issues/42',
      'authorization failed',
      'npm_config_cache=/tmp/npm-cache and glpat- alone are not tokens',
    ];
    for (const line of prose) expect(maskSecrets(line)).toBe(line);
  });
});

describe('maskSecrets: configured values', () => {
  it('masks every occurrence, longest value first', () => {
    const secrets = ['hunter2-long', 'hunter2-long-and-longer'];
    expect(maskSecrets('a hunter2-long-and-longer b hunter2-long c', secrets)).toBe('a *** b *** c');
  });

  it('masks the JSON-escaped form of values with quotes, backslashes and newlines', () => {
    const secret = 'p"a\\ss\nword';
    const line = JSON.stringify({ msg: `x ${secret} y` });
    expect(maskSecrets(line, [secret])).toBe('{"msg":"x *** y"}');
    expect(maskSecrets(`raw ${secret} raw`, [secret])).toBe('raw *** raw');
  });

  it('treats regex metacharacters in values literally', () => {
    expect(maskSecrets('a (.*)+[x]$^ b ab', ['(.*)+[x]$^'])).toBe('a *** b ab');
  });

  it('ignores empty values', () => {
    expect(maskSecrets('unchanged', [''])).toBe('unchanged');
  });

  it('compiles once and can be reused', () => {
    const mask = createMasker(['correct-horse-battery']);
    expect(mask('1 correct-horse-battery')).toBe('1 ***');
    expect(mask('2 correct-horse-battery')).toBe('2 ***');
  });
});
