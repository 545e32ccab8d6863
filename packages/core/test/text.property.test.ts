import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  boundTail,
  graphemePrefix,
  previewValue,
  redactUrlCredentials,
  splitTailMarker,
  summarizeReason,
  truncateHead,
  utf8ByteLength,
} from '../src/text.js';

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder('utf-8', { fatal: true });
// String.prototype.isWellFormed is ES2024; the base lib stops at ES2023.
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const marker = /^…\[truncated ([\d,]+) bytes\]\n/;

describe('utf8ByteLength', () => {
  it('agrees with TextEncoder', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(utf8ByteLength(text)).toBe(encoder.encode(text).length);
      }),
    );
  });
});

describe('boundTail', () => {
  it('leaves short text alone', () => {
    expect(boundTail('hello', 5)).toBe('hello');
  });

  it('keeps the end and never splits a multi-byte character', () => {
    // "é" is 2 bytes, "😀" 4: 3 bytes allow only the final "é" plus nothing else.
    expect(boundTail('😀é', 3)).toBe('…[truncated 4 bytes]\né');
    expect(boundTail('é😀', 3)).toBe('…[truncated 6 bytes]\n');
    expect(boundTail('aaaa😀', 5)).toBe('…[truncated 3 bytes]\na😀');
  });

  it('bounding a bounded tail again counts every byte dropped, not the first marker', () => {
    // The process runner keeps 8 KiB of a 70 KB output; the run record bounds it again.
    const once = boundTail('é'.repeat(35_000), 8192);
    expect(once.startsWith('…[truncated 61,808 bytes]\n')).toBe(true);
    expect(boundTail(once, 8192)).toBe(once);
    expect(boundTail(once, 100)).toBe(`…[truncated 69,900 bytes]\n${'é'.repeat(50)}`);
  });

  it('counts bytes a runner dropped before the text in the marker', () => {
    expect(boundTail('abc', 10, { dropped: 5 })).toBe('…[truncated 5 bytes]\nabc');
    expect(boundTail('abcdef', 2, { dropped: 1_000 })).toBe('…[truncated 1,004 bytes]\nef');
    expect(boundTail('abc', 10, { dropped: 0 })).toBe('abc');
  });

  it('reads back only a marker it could have written', () => {
    expect(splitTailMarker('…[truncated 62,113 bytes]\nabc')).toEqual({ dropped: 62_113, kept: 'abc' });
    expect(splitTailMarker('…[truncated 62113 bytes]\nabc')).toEqual({ dropped: 62_113, kept: 'abc' });
    for (const text of [
      '…[truncated 1,2,3 bytes]\nabc',
      '…[truncated 99999999999999999999 bytes]\nabc',
      'x…[truncated 5 bytes]\nabc',
    ]) {
      expect(splitTailMarker(text)).toEqual({ dropped: 0, kept: text });
    }
  });

  it('bounding twice is bounding once by the smaller bound', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', 'é', '😀', '\n'), maxLength: 300 }),
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 0, max: 400 }),
        (text, first, second) => {
          expect(boundTail(boundTail(text, first), second)).toBe(boundTail(text, Math.min(first, second)));
        },
      ),
    );
  });

  it('refuses a negative bound', () => {
    expect(() => boundTail('x', -1)).toThrow(RangeError);
  });

  it('is bounded, valid UTF-8, a suffix of the input, and counts what it dropped', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', 'é', '€', '😀', '\n', '中'), maxLength: 300 }),
        fc.integer({ min: 0, max: 400 }),
        (text, maxBytes) => {
          const result = boundTail(text, maxBytes);
          const match = marker.exec(result);
          const kept = match === null ? result : result.slice(match[0].length);
          expect(utf8ByteLength(kept)).toBeLessThanOrEqual(maxBytes);
          expect(text.endsWith(kept)).toBe(true);
          expect(strictDecoder.decode(encoder.encode(result))).toBe(result);
          if (match === null) {
            expect(result).toBe(text);
          } else {
            expect(Number(match[1]?.replace(/,/g, ''))).toBe(utf8ByteLength(text) - utf8ByteLength(kept));
            // Maximal: one more character from the input would not have fit.
            const before = Array.from(text.slice(0, text.length - kept.length)).pop() ?? '';
            expect(utf8ByteLength(before + kept)).toBeGreaterThan(maxBytes);
          }
        },
      ),
    );
  });

  it('never produces lone surrogates from full unicode input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 100 }), fc.nat(64), (text, maxBytes) => {
        const result = boundTail(text, maxBytes);
        expect(loneSurrogate.test(result)).toBe(false);
      }),
    );
  });
});

describe('previewValue', () => {
  it('renders JSON, truncates and redacts', () => {
    expect(previewValue(42)).toBe('42');
    expect(previewValue('a')).toBe('"a"');
    expect(previewValue(undefined)).toBe('undefined');
    expect(previewValue(10n)).toBe('10n');
    expect(previewValue('x'.repeat(1000)).length).toBe(80);
    expect(previewValue({ url: 'https://u:secret@h/x' })).toBe('{"url":"https://***@h/x"}');
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(previewValue(cyclic)).toBe('[unrenderable value]');
  });

  it('redacts credentials even when the cut would fall inside them', () => {
    const long = `${'y'.repeat(60)} https://user:ghp_0123456789abcdef@github.com/o/r`;
    expect(previewValue(long)).not.toContain('ghp_');
    expect(redactUrlCredentials('ssh://git@host/p and http://tok@h')).toBe('ssh://***@host/p and http://***@h');
  });

  // No clock assertion (a loaded machine is slow, not wrong): a quadratic scan would not
  // finish these inputs before the test's timeout.
  it('handles megabyte strings', () => {
    expect(previewValue('x'.repeat(4 * 1024 * 1024)).length).toBeLessThan(200);
    expect(redactUrlCredentials('https:'.repeat(500_000))).toHaveLength(3_000_000);
  });
});

describe('summarizeReason', () => {
  // Shaped as the pipeline builds it: runPass's message around verify's feedbackFor(), and
  // the dead-letter reason that adds the code in front and the attempts at the very end.
  const feedback = [
    'Step test failed (exit 1): npm test',
    'Failing tests:',
    '- multiplies by a negative number',
    'First error:',
    'AssertionError: Expected values to be strictly equal: 0 !== -8',
  ].join('\n');
  const message = `pass test: still failing after 3 attempts. Last feedback:\n${feedback}`;

  it('carries the first sentence and what the dangling label introduced', () => {
    expect(summarizeReason(message)).toBe(
      'pass test: still failing after 3 attempts — Step test failed (exit 1): npm test',
    );
    expect(summarizeReason(`fix_attempts_exhausted: ${message} (attempts exhausted: 1 of 1)`)).toBe(
      'fix_attempts_exhausted: pass test: still failing after 3 attempts — Step test failed (exit 1): npm test',
    );
  });

  it('stops at a second label: what follows it is output, not a reason', () => {
    const agent =
      'pass implement: still failing after 2 attempts. Last feedback:\nThe agent exited with code 1. Its last output:\nnpm ERR! 404';
    expect(summarizeReason(agent)).toBe(
      'pass implement: still failing after 2 attempts — The agent exited with code 1.',
    );
  });

  it('keeps a one-line reason, drops a bare label line, and never ends in a label', () => {
    expect(summarizeReason('no_changes: the agent changed nothing')).toBe('no_changes: the agent changed nothing');
    expect(summarizeReason('Last feedback:\n\n  Step build failed (exit 2): tsc')).toBe(
      'Step build failed (exit 2): tsc',
    );
    expect(summarizeReason('Last feedback:')).toBe('Last feedback');
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a b', 'x.', ' Label:', '\n', 'Last feedback:', ': ', '.', '! '), { maxLength: 12 }),
        (pieces) => {
          const summary = summarizeReason(pieces.join(''));
          expect(summary).not.toMatch(/[\n:]$|\n/);
        },
      ),
    );
  });

  it('is cut to the bound on one line', () => {
    const long = summarizeReason(`${'word '.repeat(100)}. Last feedback:\nStep x failed`, 60);
    expect(long.length).toBeLessThanOrEqual(60);
    expect(long.endsWith('…')).toBe(true);
  });
});

describe('graphemePrefix and truncateHead', () => {
  const family = '👨‍👩‍👧‍👦'; // 11 UTF-16 units joined by ZWJ
  const thumb = '👍🏽'; // an emoji with its skin tone
  const flag = '🇯🇵';
  const accented = 'e\u0301'; // e + combining acute accent

  it('never cuts through a grapheme', () => {
    expect(graphemePrefix(`ab${family}`, 8)).toBe('ab');
    expect(graphemePrefix(`ab${family}cd`, 13)).toBe(`ab${family}`);
    expect(graphemePrefix(`a${thumb}`, 3)).toBe('a');
    expect(graphemePrefix(`a${flag}`, 4)).toBe('a');
    expect(graphemePrefix(`x${accented}`, 2)).toBe('x');
    expect(truncateHead(`${'a'.repeat(2_998)}${thumb}tail`, 3_000)).toBe(`${'a'.repeat(2_998)}…`);
  });

  it('is a prefix within the bound, ending on a boundary Intl.Segmenter agrees with', () => {
    const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
    fc.assert(
      fc.property(
        fc
          .array(fc.constantFrom('a', 'é', '😀', family, thumb, flag, accented, '\n'), { maxLength: 60 })
          .map((parts) => parts.join('')),
        fc.integer({ min: 0, max: 200 }),
        (text, max) => {
          const cut = graphemePrefix(text, max);
          expect(cut.length).toBeLessThanOrEqual(Math.max(max, 0));
          expect(text.startsWith(cut)).toBe(true);
          const boundaries = new Set([...segmenter.segment(text)].map((s) => s.index).concat(text.length));
          expect(boundaries.has(cut.length)).toBe(true);
          // The longest such prefix: the next boundary is past the bound.
          const next = [...boundaries].filter((b) => b > cut.length).sort((a, b) => a - b)[0];
          if (next !== undefined) expect(next).toBeGreaterThan(max);
        },
      ),
    );
  });
});
