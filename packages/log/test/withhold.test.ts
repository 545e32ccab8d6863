import { describe, expect, it } from '@jest/globals';
import { maskForPublishing, MASK, WITHHELD } from '../src/index.js';

const secret = 'forge-token-5f1c2b7e9a';
const hex = Buffer.from(secret).toString('hex');

describe('maskForPublishing', () => {
  it('masks a plain value and keeps everything else', () => {
    expect(maskForPublishing(`Fix the ${secret} bug\nsee #12`, [secret])).toBe(`Fix the ${MASK} bug\nsee #12`);
    expect(maskForPublishing('Fix the login bug: commit 0123456789abcdef0123456789abcdef01234567', [secret])).toBe(
      'Fix the login bug: commit 0123456789abcdef0123456789abcdef01234567',
    );
  });

  it.each([
    ['flat hex', hex],
    ['hex with colons, upper case', hex.replace(/(..)(?!$)/g, '$1:').toUpperCase()],
    ['base64', Buffer.from(`key=${secret}`).toString('base64')],
    ['percent-encoded', [...Buffer.from(secret)].map((b) => `%${b.toString(16)}`).join('')],
  ])('withholds the line that holds it as %s, and only that line', (_how, encoded) => {
    const text = `Tests failed.\noutput: ${encoded}\nRetry with /codefleet retry`;
    expect(maskForPublishing(text, [secret])).toBe(`Tests failed.\n${WITHHELD}\nRetry with /codefleet retry`);
  });

  it('withholds a blob wrapped over lines (xxd -p, 60 columns), keeping the prose around it', () => {
    // The value starts at column 50: no line of the dump holds all of it.
    const dump = Buffer.from(`${'x'.repeat(25)}${secret} and more bytes after it`)
      .toString('hex')
      .replace(/(.{60})/g, '$1\n');
    const out = maskForPublishing(`The agent printed:\n${dump}\nThen it stopped.`, [secret]);
    expect(out).not.toMatch(/[0-9a-f]{20}/);
    expect(out.startsWith('The agent printed:\n')).toBe(true);
    expect(out.endsWith('\nThen it stopped.')).toBe(true);
  });

  it("leaves the masker's own output alone (a redacted private key)", () => {
    const pem = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----';
    expect(maskForPublishing(`key:\n${pem}`, [secret])).toBe(
      'key:\n-----BEGIN PRIVATE KEY-----[REDACTED]-----END PRIVATE KEY-----',
    );
  });
});
