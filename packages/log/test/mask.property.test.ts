import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { maskSecrets } from '../src/index.js';
import { capture } from './capture.js';

// Values shaped like real secrets, and arbitrary printable ones (quotes, backslashes, spaces).
// `*` is left out: a value made of asterisks could reappear inside the `***` mask itself.
const secretArb = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_\-+/=.]{6,48}$/),
  fc.string({ minLength: 6, maxLength: 32 }).filter((s) => !s.includes('*')),
);
const textArb = fc.oneof(fc.string({ maxLength: 64 }), fc.string({ unit: 'binary', maxLength: 64 }));

describe('masking properties', () => {
  it('never leaks a configured secret planted anywhere in a string', () => {
    fc.assert(
      fc.property(secretArb, textArb, textArb, fc.nat({ max: 3 }), (secret, before, after, repeat) => {
        const text = `${before}${secret}${after}${secret.repeat(repeat)}`;
        expect(maskSecrets(text, [secret])).not.toContain(secret);
      }),
      { numRuns: 500 },
    );
  });

  it('never leaks a configured secret through a logger, in any form', () => {
    fc.assert(
      fc.property(secretArb, textArb, textArb, (secret, before, after) => {
        const { log, lines } = capture({ secrets: [secret] });
        log.info({ field: `${before}${secret}`, nested: { list: [after, secret] } }, `${before}${secret}${after}`);
        const out = lines.join('');
        expect(out).not.toContain(secret);
        expect(out).not.toContain(JSON.stringify(secret).slice(1, -1));
      }),
      { numRuns: 300 },
    );
  });

  it('leaves text without secrets or tokens unchanged', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z ,.]{0,80}$/), (text) => {
        expect(maskSecrets(text, ['configured-secret'])).toBe(text);
      }),
    );
  });
});
