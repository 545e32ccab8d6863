import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { charSuffix, truncateTail, utf8ByteLength, utf8Prefix, utf8Suffix } from '../src/text.js';

// String.prototype.isWellFormed is ES2024; the base lib stops at ES2023.
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const someUnicode = fc.string({ unit: fc.constantFrom('a', 'é', '€', '😀', '\n', '中'), maxLength: 200 });

describe('utf8Prefix and utf8Suffix', () => {
  it('keep the longest start or end within the bytes, never splitting a code point', () => {
    fc.assert(
      fc.property(someUnicode, fc.integer({ min: 0, max: 300 }), (text, maxBytes) => {
        const head = utf8Prefix(text, maxBytes);
        const tail = utf8Suffix(text, maxBytes);
        expect(text.startsWith(head) && text.endsWith(tail)).toBe(true);
        for (const kept of [head, tail]) {
          expect(utf8ByteLength(kept)).toBeLessThanOrEqual(maxBytes);
          expect(loneSurrogate.test(kept)).toBe(false);
        }
        // Maximal: one more character of the input would not have fit.
        const nextHead = Array.from(text.slice(head.length))[0];
        if (nextHead !== undefined) expect(utf8ByteLength(head + nextHead)).toBeGreaterThan(maxBytes);
        const nextTail = Array.from(text.slice(0, text.length - tail.length)).pop();
        if (nextTail !== undefined) expect(utf8ByteLength(nextTail + tail)).toBeGreaterThan(maxBytes);
      }),
    );
  });
});

describe('charSuffix and truncateTail', () => {
  it('keep at most the characters asked, one fewer rather than half an emoji', () => {
    expect(charSuffix('ab😀', 1)).toBe('');
    expect(charSuffix('ab😀', 2)).toBe('😀');
    expect(truncateTail('ab😀cd', 4)).toBe('…cd');
    fc.assert(
      fc.property(someUnicode, fc.integer({ min: 0, max: 250 }), (text, maxChars) => {
        for (const kept of [charSuffix(text, maxChars), truncateTail(text, maxChars)]) {
          expect(kept.length).toBeLessThanOrEqual(maxChars);
          expect(kept.length).toBeGreaterThanOrEqual(Math.min(text.length, maxChars - 2));
          expect(loneSurrogate.test(kept)).toBe(false);
        }
      }),
    );
  });
});
